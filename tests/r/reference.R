# Reference values for the analysis tests, computed independently in base R.
#
# Reads tests/data/ratings_small.csv and writes tests/data/r_reference/*.csv.
# Run from the repository root (R >= 4.2, base packages only):
#
#     Rscript tests/r/reference.R
#
# The tests read the stored CSV files and do not need R.

options(digits = 17)
input <- "tests/data/ratings_small.csv"
out <- "tests/data/r_reference"
dir.create(out, showWarnings = FALSE, recursive = TRUE)
write <- function(frame, name) {
  write.csv(frame, file.path(out, name), row.names = FALSE, na = "")
}

ratings <- read.csv(input, na.strings = "n/a", colClasses = c(participant = "character"))
main <- ratings[ratings$phase == "main", ]
sketches <- sort(unique(main$sketch_id))
participants <- sort(unique(ratings$participant))

# Kendall tau_b for two vectors over the items both rated, with all three
# alternatives: cor.test(method = "kendall", exact = FALSE) uses the normal
# approximation with the tie-corrected variance of S.
kendall <- function(x, y) {
  keep <- !is.na(x) & !is.na(y)
  x <- x[keep]; y <- y[keep]
  if (length(x) < 3 || length(unique(x)) < 2 || length(unique(y)) < 2) {
    return(c(tau = NA, greater = NA, two_sided = NA, less = NA, n = length(x)))
  }
  p <- function(alt) {
    suppressWarnings(cor.test(x, y, method = "kendall", exact = FALSE,
                              alternative = alt)$p.value)
  }
  c(tau = unname(cor(x, y, method = "kendall")),
    greater = p("greater"), two_sided = p("two.sided"), less = p("less"),
    n = length(x))
}

matrix_of <- function(frame, sketch, value = "rating") {
  part <- frame[frame$sketch_id == sketch, ]
  images <- sort(unique(part$image_id))
  m <- matrix(NA_real_, nrow = length(participants), ncol = length(images),
              dimnames = list(participants, images))
  m[cbind(part$participant, part$image_id)] <- part[[value]]
  m
}

# 1. Inter-user tau_b, every sketch and pair of participants.
rows <- list()
for (s in sketches) {
  m <- matrix_of(main, s)
  for (a in seq_along(participants)) for (b in seq_along(participants)) if (a < b) {
    k <- kendall(m[a, ], m[b, ])
    rows[[length(rows) + 1]] <- data.frame(
      sketch_id = s, participant_a = participants[a], participant_b = participants[b],
      tau_b = k["tau"], p_greater = k["greater"], p_two_sided = k["two_sided"],
      p_less = k["less"], n_items = k["n"])
  }
}
write(do.call(rbind, rows), "pairwise.csv")

# 2. Kendall's W per sketch over the raters who rated every image:
#    W = Friedman chi-square (tie-corrected) / (m (n - 1)); F = (m - 1) W / (1 - W)
#    with df1 = n - 1 - 2/m, df2 = (m - 1) df1.
rows <- list()
for (s in sketches) {
  m <- matrix_of(main, s)
  complete <- m[complete.cases(m), , drop = FALSE]
  test <- friedman.test(complete)
  raters <- nrow(complete); items <- ncol(complete)
  w <- unname(test$statistic) / (raters * (items - 1))
  f <- (raters - 1) * w / (1 - w)
  df1 <- items - 1 - 2 / raters
  df2 <- (raters - 1) * df1
  rows[[length(rows) + 1]] <- data.frame(
    sketch_id = s, w = w, chi2 = unname(test$statistic), df = unname(test$parameter),
    p_value = test$p.value, f = f, f_df1 = df1, f_df2 = df2,
    f_p_value = pf(f, df1, df2, lower.tail = FALSE),
    n_raters = raters, n_items = items, n_raters_excluded = nrow(m) - raters)
}
write(do.call(rbind, rows), "kendall_w.csv")

# 3. Consensus ground truth: mean, median, sd, count and average rank per pair.
given <- main[!is.na(main$rating), ]
key <- list(sketch_id = given$sketch_id, image_id = given$image_id)
gt <- aggregate(given$rating, key, mean)
names(gt)[3] <- "mean_rating"
gt$median_rating <- aggregate(given$rating, key, median)$x
gt$sd_rating <- aggregate(given$rating, key, sd)$x
gt$n_ratings <- aggregate(given$rating, key, length)$x
gt$rank <- ave(gt$mean_rating, gt$sketch_id, FUN = function(v) rank(v, ties.method = "average"))
write(gt[order(gt$sketch_id, gt$rank, gt$image_id), ], "ground_truth.csv")

# 4. Participant vs consensus, inclusive and leave-one-out (one-sided, greater).
rows <- list()
for (s in sketches) {
  m <- matrix_of(main, s)
  inclusive <- colMeans(m, na.rm = TRUE)
  for (j in seq_along(participants)) {
    others <- colMeans(m[-j, , drop = FALSE], na.rm = TRUE)
    k <- kendall(m[j, ], inclusive)
    l <- kendall(m[j, ], others)
    rows[[length(rows) + 1]] <- data.frame(
      participant = participants[j], sketch_id = s, tau_b = k["tau"], p_value = k["greater"],
      tau_b_loo = l["tau"], p_value_loo = l["greater"], n_items = k["n"])
  }
}
write(do.call(rbind, rows), "consensus.csv")

# 5. Anchoring: repeated anchor ratings against the prescribed ones.
repeats <- ratings[ratings$phase == "anchor_repeat", ]
rows <- list()
for (s in sort(unique(repeats$sketch_id))) {
  given_m <- matrix_of(repeats, s)
  prescribed <- matrix_of(repeats, s, "anchor_rating")
  for (j in seq_along(participants)) {
    k <- kendall(given_m[j, ], prescribed[j, ])
    rows[[length(rows) + 1]] <- data.frame(
      participant = participants[j], sketch_id = s, tau_b = k["tau"], p_value = k["greater"],
      n_items = k["n"])
  }
}
write(do.call(rbind, rows), "anchoring.csv")

# 6. Binned medians (Eq. 3): bin k holds the ratings of pairs with k <= median < k + 1.
medians <- aggregate(given$rating, key, median)
names(medians)[3] <- "pair_median"
binned <- merge(given, medians)
binned$bin <- floor(binned$pair_median)
rows <- list()
for (k in 1:7) {
  r <- binned$rating[binned$bin == k]
  hist <- sapply(1:7, function(v) sum(r == v))
  rows[[k]] <- data.frame(bin = k, n_ratings = length(r),
                          mean = if (length(r)) mean(r) else NA,
                          sd = if (length(r) > 1) sd(r) else NA,
                          t(setNames(hist, paste0("n_rating_", 1:7))))
}
write(do.call(rbind, rows), "bins.csv")

# 7. Families of tests: share significant at 0.05, Wilson 95% interval
#    (prop.test without continuity correction is the Wilson score interval)
#    and the Benjamini-Hochberg count (p.adjust "BH" <= 0.05).
pairwise <- read.csv(file.path(out, "pairwise.csv"))
consensus <- read.csv(file.path(out, "consensus.csv"))
anchoring <- read.csv(file.path(out, "anchoring.csv"))
family <- function(name, p) {
  p <- p[!is.na(p)]
  k <- sum(p < 0.05); n <- length(p)
  ci <- prop.test(k, n, correct = FALSE)$conf.int
  data.frame(family = name, n_tests = n, n_significant = k, wilson_low = ci[1],
             wilson_high = ci[2], n_significant_bh = sum(p.adjust(p, "BH") <= 0.05))
}
write(rbind(family("pairwise", pairwise$p_greater),
            family("consensus", consensus$p_value),
            family("consensus_loo", consensus$p_value_loo),
            family("anchoring", anchoring$p_value)), "families.csv")

writeLines(R.version.string, file.path(out, "R_VERSION"))
