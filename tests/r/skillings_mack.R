# Reference values of the Skillings-Mack test for tests/analysis/test_missing_ratings.py.
#
# They come from the R package Skillings.Mack (P. Srisuradetchai; CRAN), function Ski.Mack,
# which is not part of this project. Install it (install.packages("Skillings.Mack"), which
# needs MASS and matrixcalc) or point SKILLINGS_MACK_R at a copy of its R/Ski.Mack.R, then run
#
#   Rscript tests/r/skillings_mack.R tests/data/r_reference
#
# Each design is a raters x items matrix with missing cells (and, on a 7-point scale, ties),
# drawn here with a fixed seed and written out, so that the test reads exactly the same
# matrices. Ski.Mack takes items as rows and blocks (raters) as columns: we pass t(m).
# Written with R 4.2.2, MASS 7.3-58.2, matrixcalc 1.0.6, Ski.Mack 1.11.

args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args)) args[1] else "tests/data/r_reference"
source_file <- Sys.getenv("SKILLINGS_MACK_R")
if (nzchar(source_file)) {
  library(MASS)
  library(matrixcalc)
  source(source_file)
} else {
  library(Skillings.Mack)
}

set.seed(2011)
designs <- list()
# Skillings and Mack (1981), Table 1 (nine blocks, four methods; raters x items here).
designs[["table1"]] <- matrix(c(
  3.2, 4.1, 3.8, 4.2,
  3.1, 3.9, 3.4, 4.0,
  4.3, 3.5, 4.6, 4.8,
  3.5, 3.6, 3.9, 4.0,
  3.6, 4.2, 3.7, 3.9,
  4.5, 4.7, 3.7, NA,
  NA, 4.2, 3.4, NA,
  4.3, 4.6, 4.4, 4.9,
  3.5, NA, 3.7, 3.9), ncol = 4, byrow = TRUE)
# Ratings on the 7-point scale, many ties, missing at random (every rater keeps >= 2 ratings).
shapes <- list(c(6, 5, 0.15), c(10, 8, 0.2), c(28, 12, 0.1), c(15, 20, 0.3), c(40, 6, 0.25))
for (s in seq_along(shapes)) {
  raters <- shapes[[s]][1]; items <- shapes[[s]][2]; miss <- shapes[[s]][3]
  latent <- sort(runif(items, 1, 7))
  m <- t(sapply(seq_len(raters), function(r) pmin(7, pmax(1, round(latent + rnorm(items, 0, 1.3))))))
  for (r in seq_len(raters)) {
    drop <- runif(items) < miss
    if (sum(!drop) < 2) drop[sample(items, items - 2)] <- TRUE
    if (sum(!drop) < 2) drop[] <- FALSE
    m[r, drop] <- NA
  }
  designs[[sprintf("scale7_%02d", s)]] <- m
}

rows <- list()
for (name in names(designs)) {
  m <- designs[[name]]
  write.csv(m, file.path(out, sprintf("skillings_mack_%s.csv", name)), row.names = FALSE,
            na = "")
  result <- Ski.Mack(t(m), suppress = TRUE)
  statistic <- as.numeric(result$adjustedSum %*% ginv(result$varCovarMatrix) %*%
                          t(result$adjustedSum))
  df <- matrix.rank(ginv(result$varCovarMatrix))
  rows[[name]] <- data.frame(design = name, statistic = sprintf("%.15g", statistic), df = df,
                             p_value = sprintf("%.15g", result$pValue))
}
write.csv(do.call(rbind, rows), file.path(out, "skillings_mack.csv"), row.names = FALSE,
          quote = FALSE)
