/*
 * sbir-study's trial for jsPsych 8: a sketch/image pair for `shown_s`, black for `blank_s`,
 * the rating keys changeable until the window closes; every key-down recorded with its
 * performance.now() time. Frame-timed with requestAnimationFrame.
 *
 * Timing convention: a change made to the page in the animation-frame callback of time t
 * is on screen from the next frame, whose callback time is taken as the change's onset
 * (so onsets and durations are frame times, as PsychoPy's flip times are). The stimulus is
 * hidden in the callback at which `shown_s` minus one frame has elapsed, so it stays on for
 * round(shown_s / frame) frames; the trial ends two frames before its blank is over and the
 * next trial makes its pair visible one frame before, so that a pair follows the blank of
 * the previous one on the frame it is due.
 *
 * A trial's response window closes when the next screen is on (the next pair's onset, or
 * the message screen after the blank), as the lab's closes at the next flip: on a stalled
 * page the blank stays on longer and a press made while it is visible counts. The window
 * closes no later than `late_flip_max_s` after the blank's nominal end (sbirWindowEnd,
 * the server's study.responses.response_window_end).
 *
 * The record is not computed here: the session sends the key events, the frame times and
 * the window to the server, which scores it with the lab session's rule
 * (study.responses.score_trial). The browser scores it too (SbirSession.score), only so that
 * the server can check that both agree.
 */
/* global jsPsychModule */
"use strict";

/*
 * A key-down reaches the page a little after its time stamp; a trial's record is put
 * together once the keys pressed before its window closed have arrived. On a free page that
 * is SBIR_KEY_GRACE_MS after the close; a timer that fires more than SBIR_KEY_LATE_MS late
 * says the page, or the machine, was busy, and a key may still be on its way: the page
 * then waits again, until a timer fires on time, at most SBIR_KEY_WAIT_MAX_MS after the
 * close. The records are put together in the order of their trials.
 */
const SBIR_KEY_GRACE_MS = 60;
const SBIR_KEY_LATE_MS = 20;
const SBIR_KEY_WAIT_MAX_MS = 1000;

/** PsychoPy's name of a browser key-down (see study/online/keys.py), or null. */
function sbirKeyName(code, key, table) {
  if (Object.prototype.hasOwnProperty.call(table, code)) return table[code];
  if (key === " ") return "space";
  if (key === "Escape" || key === "Esc") return "escape";
  if (key === "Enter") return "return";
  if (key.length === 1 && /^[A-Za-z0-9]$/.test(key)) return key.toLowerCase();
  return null;
}

/** When a window closes: at the next screen's onset, at most `lateMax` after the nominal end. */
function sbirWindowEnd(blankOnset, nextOnset, blank, lateMax) {
  return Math.min(nextOnset, blankOnset + blank + lateMax);
}

/** The last rating key in [onset, windowEnd): {rating, rt, presses}, as score_trial does. */
function sbirScore(events, onset, windowEnd, ratingKeys, table) {
  const seen = new Set();
  const stream = [];
  for (const event of events) {
    const name = sbirKeyName(event.code, event.key, table);
    if (name === null) continue;
    const ident = name + "\u0000" + event.t;
    if (seen.has(ident)) continue;
    seen.add(ident);
    stream.push({ name, t: event.t });
  }
  stream.sort((a, b) => a.t - b.t); // stable: simultaneous events keep their arrival order
  const presses = stream
    .filter((e) => Object.prototype.hasOwnProperty.call(ratingKeys, e.name))
    .filter((e) => onset <= e.t && e.t < windowEnd)
    .map((e) => [ratingKeys[e.name], e.t - onset]);
  if (!presses.length) return { rating: null, rt: null, presses };
  const last = presses[presses.length - 1];
  return { rating: last[0], rt: last[1], presses };
}

/** Trials the server has not acknowledged, kept in localStorage and sent with back-off. */
class SbirSender {
  constructor(sessionId, token) {
    this.url = (trial) => `api/sessions/${sessionId}/trials/${trial}`;
    this.token = token;
    this.storageKey = `sbir-queue:${sessionId}`;
    this.refusedKey = `sbir-refused:${sessionId}`;
    this.queue = JSON.parse(localStorage.getItem(this.storageKey) || "[]");
    this.sending = false;
    this.delay = 0.25;
    this.acknowledged = 0;
    this.attempts = 0;
  }

  save() {
    localStorage.setItem(this.storageKey, JSON.stringify(this.queue));
  }

  push(trial, body) {
    this.queue.push({ trial, body });
    this.save();
    this.kick();
  }

  highestQueued() {
    return this.queue.reduce((most, item) => Math.max(most, item.trial), 0);
  }

  async kick() {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.queue.length) {
        const item = this.queue[0];
        let answer = null;
        this.attempts += 1;
        try {
          answer = await fetch(this.url(item.trial), {
            method: "PUT",
            headers: { "Content-Type": "application/json", Authorization: `Bearer ${this.token}` },
            // With the trials waiting behind it, for the experimenter's live load (not stored).
            body: JSON.stringify({ ...item.body, queued: this.queue.length - 1 }),
            cache: "no-store",
          });
        } catch (error) {
          answer = null; // offline, server restarting: retry
        }
        if (answer && answer.ok) {
          this.queue.shift();
          this.save();
          this.acknowledged += 1;
          this.delay = 0.25;
          continue;
        }
        if (answer && answer.status >= 400 && answer.status < 500 && ![408, 425, 429].includes(answer.status)) {
          // Refused for good (the server says why): keep it aside, never resend it.
          let reason = "";
          try { reason = (await answer.json()).error; } catch (error) { reason = String(answer.status); }
          const refused = JSON.parse(localStorage.getItem(this.refusedKey) || "[]");
          refused.push({ trial: item.trial, status: answer.status, error: reason });
          localStorage.setItem(this.refusedKey, JSON.stringify(refused));
          console.error(`trial ${item.trial} refused: ${reason}`);
          this.queue.shift();
          this.save();
          continue;
        }
        await new Promise((done) => setTimeout(done, this.delay * (0.5 + Math.random()) * 1000));
        this.delay = Math.min(this.delay * 2, 15);
      }
    } finally {
      this.sending = false;
    }
  }

  /** Resolves when every queued trial is acknowledged (retrying for as long as it takes). */
  async drain() {
    while (this.queue.length) {
      this.kick();
      await new Promise((done) => setTimeout(done, 100));
    }
  }
}

/** The screens the server knows a key by (participant_routes.Screen). */
const SBIR_SCREENS = ["trial", "instructions", "message", "pause", "quit", "saving"];

/** A key-down as the server takes it, with the screen on view, one of those it knows. */
function sbirScreenKey({ code, key, t, screen }) {
  return { code, key, t, screen: SBIR_SCREENS.includes(screen) ? screen : "message" };
}

/**
 * The most keys of the screens sent with one report, the server's bound on a report's
 * screen_events and a finish's events: a long break's key mashing must not get the next
 * trial refused. Past it, only the last ones are sent (docs/formats.md, the key log).
 */
const SBIR_SCREEN_KEYS_MAX = 500;

/** One participant's running session: the key log, the frame log and the pending trial. */
class SbirSession {
  constructor(config, state, token) {
    this.config = config;
    this.state = state;
    this.table = config.response.key_names;
    this.ratingKeys = config.response.rating_keys;
    this.sender = new SbirSender(state.session_id, token);
    this.events = [];
    this.frames = [];
    this.period = 1 / 60;
    this.intervals = [];
    this.pending = null;
    this.closed = []; // records being put together (their key events still arriving), in trial order
    this.nextOnsetTarget = 0;
    this.nominalNext = null; // when the next pair is due if no screen comes between (page clock, s)
    this.sessionStart = null;
    this.firstPair = true; // the page's first pair is yet to come
    this.pausedBefore = 0;
    this.pauseRequested = false;
    this.quitRequested = false;
    this.controlAt = -Infinity; // when the last pause or quit key of a trial's window went down (s)
    this.lastWindow = null; // the last closed window: {onset, end, closedBy: the screen that closed it}
    this.onsets = []; // for the tests: [{trial, onset, window_end}] on the page's clock (s)
    this.screens = []; // for the tests: [{phase, shown}] of the message screens (s)
    this.current = null;
    this.visible = "message"; // the screen on view: "trial" from a pair's flip, else a message's phase
    this.prepared = new Map();
    const control = config.response;
    this.listener = (event) => {
      if (event.repeat) return; // a held key repeats; PsychoPy reports one press per key-down
      const t = event.timeStamp / 1000;
      // The screen on view when it came (for the key log): a pair or its blank, or a message.
      this.events.push({ code: event.code || "", key: event.key || "", t, screen: this.visible });
      const name = sbirKeyName(event.code || "", event.key || "", this.table);
      // A pause or quit key of a trial's window: its pair, and its blank until the next
      // screen is flipped (the pending trial), as the lab takes one at any instant of a
      // trial; or one a busy page takes late, stamped in a window that has closed since,
      // unless the screen that closed it is the one the key asks for.
      const open = Boolean(this.current || this.pending);
      const last = this.lastWindow;
      const late = !open && last !== null && t >= last.onset && t < last.end;
      if (open || late) {
        const handled = late ? last.closedBy : null;
        if (name === control.pause_key && config.pauses.allowed && handled !== "pause") {
          this.pauseRequested = true;
          this.controlAt = t;
        }
        if (name === control.quit_key && handled !== "quit") {
          this.quitRequested = true;
          this.controlAt = t;
        }
      }
    };
    document.addEventListener("keydown", this.listener, { capture: true });
    document.addEventListener("fullscreenchange", () => {
      // Leaving full screen (a browser takes Escape for that) asks to end, as the quit key does.
      if (!document.fullscreenElement && (this.current || this.pending)) {
        this.quitRequested = true;
        this.controlAt = performance.now() / 1000;
      }
    });
  }

  frame(ts) {
    const last = this.frames.length ? this.frames[this.frames.length - 1] : null;
    this.frames.push(ts);
    if (last !== null && ts > last) {
      this.intervals.push(ts - last);
      if (this.intervals.length > 30) this.intervals.shift();
      const sorted = [...this.intervals].sort((a, b) => a - b);
      this.period = sorted[Math.floor(sorted.length / 2)];
    }
  }

  prepare(index) {
    if (index >= this.state.trials.length || this.prepared.has(index)) return;
    const trial = this.state.trials[index];
    const images = [trial.sketch_url, trial.image_url].map((url) => {
      const image = new Image();
      image.src = url;
      image.decode().catch(() => {});
      image.draggable = false;
      return image;
    });
    this.prepared.set(index, images);
  }

  take(index) {
    this.prepare(index);
    const images = this.prepared.get(index);
    this.prepared.delete(index);
    return images;
  }

  /** The pending trial's window has closed and the next screen is up at `ts`: send it. */
  closePending(ts) {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null;
    this.frame(ts);
    const frames = this.frames.filter((t) => t >= pending.onset && t <= ts);
    this.frames = [ts];
    const timing = this.config.timing;
    const windowEnd = sbirWindowEnd(pending.blankOnset, ts, timing.blank_s, timing.late_flip_max_s);
    const shown = this.onsets.find((o) => o.trial === pending.trial.trial && o.onset === pending.onset);
    if (shown) shown.window_end = windowEnd;
    this.lastWindow = { onset: pending.onset, end: windowEnd, closedBy: this.visible };
    // A pause or question that closes the window handles the key that asked for it (one
    // pause, not a second after it); the other's key comes after it.
    if (this.visible === "pause") this.pauseRequested = false;
    if (this.visible === "quit") this.quitRequested = false;
    // Its key events are collected once those pressed before the window closed have come.
    this.closed.push({ pending, ts, frames, windowEnd, closedAt: performance.now() });
    if (this.closed.length === 1) this.collectLater(SBIR_KEY_GRACE_MS);
  }

  collectLater(delay) {
    const due = performance.now() + delay;
    setTimeout(() => this.collect(due), delay);
  }

  /** Put together the first closed record whose keys have come (SBIR_KEY_GRACE_MS). */
  collect(due) {
    const { pending, ts, frames, windowEnd, closedAt } = this.closed[0];
    const now = performance.now();
    const waited = now - closedAt;
    const late = now - due > SBIR_KEY_LATE_MS; // the page, or the machine, was busy
    if (waited < SBIR_KEY_WAIT_MAX_MS && (waited < SBIR_KEY_GRACE_MS || late)) {
      this.collectLater(late ? SBIR_KEY_GRACE_MS : SBIR_KEY_GRACE_MS - waited);
      return;
    }
    this.closed.shift();
    const events = this.events.filter((e) => e.t >= pending.onset && e.t < windowEnd + 0.05)
      .map(sbirScreenKey);
    // Keys of the screens since the previous pair's report (it kept those from its window's
    // end on): the instructions, a pause, the quit question answered no.
    const screenEvents = this.events.filter((e) => e.t < pending.onset)
      .slice(-SBIR_SCREEN_KEYS_MAX).map(sbirScreenKey);
    this.events = this.events.filter((e) => e.t >= windowEnd);
    const scored = sbirScore(events, pending.onset, windowEnd, this.ratingKeys, this.table);
    const body = {
      sketch_id: pending.trial.sketch_id,
      image_id: pending.trial.image_id,
      onset: pending.onset,
      blank_onset: pending.blankOnset,
      next_onset: ts,
      session_start: this.sessionStart,
      frames,
      events,
      screen_events: screenEvents,
      paused_before: pending.pausedBefore,
      rating: pending.trial.phase === "anchor_demo" ? null : scored.rating,
    };
    this.sender.push(pending.trial.trial, body);
    this.keepClock(windowEnd);
    if (this.closed.length) this.collectLater(Math.max(0, this.closed[0].closedAt + SBIR_KEY_GRACE_MS - now));
  }

  /** The keys not yet sent, of the last screens (the quit question, the end): the finish's. */
  finalKeys() {
    const events = this.events.slice(-SBIR_SCREEN_KEYS_MAX).map(sbirScreenKey);
    return { session_start: this.sessionStart, events };
  }

  /** The most recent key-down's time (the key that ended a screen), else now (s). */
  lastKeyTime() {
    return this.events.length ? this.events[this.events.length - 1].t : performance.now() / 1000;
  }

  /**
   * The session's clock, kept across a reload: when the session began on the wall clock and
   * where its last window closed (session time). A reload restarts performance.now(); with
   * this the time away is known, and counted as a pause is.
   */
  clockKey() {
    return `sbir-clock:${this.state.session_id}`;
  }

  keepClock(windowEnd) {
    const startWall = Date.now() / 1000 - (performance.now() / 1000 - this.sessionStart);
    const kept = JSON.parse(localStorage.getItem(this.clockKey()) || "null");
    localStorage.setItem(this.clockKey(), JSON.stringify({
      start_wall: kept ? kept.start_wall : startWall,
      window_end: windowEnd === undefined ? (kept ? kept.window_end : 0) : windowEnd - this.sessionStart,
    }));
  }

  /**
   * The key that ended the session's first screen was pressed at `t`: the session's clock
   * starts there, or, after a reload (`resumed`), goes on from where it stopped, the time
   * away included; the first pair comes one blank later.
   */
  begin(t, resumed) {
    const kept = resumed ? JSON.parse(localStorage.getItem(this.clockKey()) || "null") : null;
    this.pausedBefore = 0;
    if (!resumed) {
      this.sessionStart = t;
      // The first pair is planned one blank after the key (the lab's Timeline): no pause.
      this.nominalNext = t + this.config.timing.blank_s;
      this.keepClock();
    } else {
      // Where the last window closed, and how much session time has passed at `t`: from
      // the wall clock when the page kept it, else none beyond the server's record.
      const stopped = kept ? kept.window_end : this.state.resumed_at;
      const away = kept ? Date.now() / 1000 - (performance.now() / 1000 - t) - kept.start_wall : stopped;
      this.sessionStart = t - Math.max(away, stopped);
      this.nominalNext = this.sessionStart + stopped;
    }
    this.resume(t);
  }

  /**
   * A waiting screen (instructions, a pause or break, the quit question answered no) was
   * ended by a key at `t`: the next pair comes one blank later, as in the lab
   * (study.schedule.Timeline.resume), and the time this adds to the timeline is the next
   * trial's paused_before.
   */
  resume(t) {
    const planned = t + this.config.timing.blank_s;
    if (this.nominalNext !== null) this.pausedBefore += planned - this.nominalNext;
    this.nominalNext = planned;
    this.nextOnsetTarget = planned - 1.5 * this.period;
  }

  /** Resolves when the last trial is recorded and every record acknowledged. */
  async settled() {
    while (this.pending || this.closed.length) await new Promise((done) => setTimeout(done, 20));
    await this.sender.drain();
  }

  /** A pair is on screen from `ts`: the previous trial (if any) is complete. */
  startTrial(ts) {
    this.visible = "trial";
    if (this.pending) this.closePending(ts);
    else this.frames = [ts];
    if (this.firstPair) {
      // A frame is stamped with the time it began; on a busy page that can come before the
      // key press that began the trials, whose performance.now() set sessionStart. The
      // session's clock starts no later than the page's first pair, which comes no earlier
      // than where the session stopped (0 unless resumed): no onset is ever before it.
      const latest = ts - (this.state.resumed_at || 0);
      if (this.sessionStart === null || this.sessionStart > latest) this.sessionStart = latest;
      this.firstPair = false;
    }
  }

  /**
   * A message screen's page is in place. After a trial it stays hidden until that trial's
   * blank is due to end, as the lab flips a waiting screen when it is due (and a pair here
   * comes); it is on from the frame after it is shown, whose time ends the pending blank.
   */
  messageShown() {
    const due = this.pending ? this.nominalNext - 1.5 * this.period : null;
    const content = document.querySelector(".sbir-text");
    if (due !== null && content) content.style.visibility = "hidden";
    const reveal = (now) => {
      if (due !== null && now / 1000 < due) {
        requestAnimationFrame(reveal);
        return;
      }
      if (content) content.style.visibility = "";
      requestAnimationFrame((ts) => {
        this.visible = window.sbir.phase;
        this.screens.push({ phase: window.sbir.phase, shown: ts / 1000 });
        this.closePending(ts / 1000);
      });
    };
    requestAnimationFrame(reveal);
    this.nextOnsetTarget = 0;
  }
}

var jsPsychSbirRating = (function (jspsych) {
  const info = {
    name: "sbir-rating",
    version: "1.0.0",
    parameters: {
      /** Index of the trial in the session's trial list (0-based). */
      index: { type: jspsych.ParameterType.INT, default: undefined },
    },
    data: {
      trial: { type: jspsych.ParameterType.INT },
      onset: { type: jspsych.ParameterType.FLOAT },
      blank_onset: { type: jspsych.ParameterType.FLOAT },
    },
  };

  class SbirRatingPlugin {
    constructor(jsPsych) {
      this.jsPsych = jsPsych;
    }

    trial(display_element, parameters) {
      const session = window.sbir.session;
      const config = session.config;
      const trial = session.state.trials[parameters.index];
      const shown = trial.phase === "anchor_demo" ? config.timing.anchor_demo_s : config.timing.stimulus_s;
      const blank = config.timing.blank_s;
      const [sketch, image] = session.take(parameters.index);
      const display = config.display;
      const [r, g, b] = display.background.map((c) => Math.round(((c + 1) / 2) * 255));
      const stage = document.createElement("div");
      stage.className = "sbir-stage";
      stage.style.background = `rgb(${r}, ${g}, ${b})`;
      stage.style.gap = `${display.gap_px}px`;
      for (const element of [sketch, image]) {
        element.className = "sbir-picture";
        element.style.width = `${display.stimulus_px}px`;
        stage.appendChild(element);
      }
      if (trial.phase === "anchor_demo") {
        const label = document.createElement("div");
        label.className = "sbir-label";
        label.style.top = `calc(50% + ${Math.round(display.stimulus_px / 2)}px)`;
        // The protocol's anchor_label ([texts]), {rating} filled as the lab window fills it.
        label.textContent = String(config.texts.anchor_label)
          .replace(/\{\{|\}\}|\{rating\}/g, (m) => (m === "{{" ? "{" : m === "}}" ? "}" : String(trial.anchor_rating)));
        stage.appendChild(label);
      }
      display_element.innerHTML = "";
      display_element.appendChild(stage);
      session.prepare(parameters.index + 1); // decoded while this pair is on

      const earliest = session.nextOnsetTarget;
      let step = "waiting";
      let onset = null;
      let blankOnset = null;
      const tick = (now) => {
        const ts = now / 1000;
        const period = session.period;
        if ((session.pauseRequested || session.quitRequested) && step !== "hiding" && step !== "blank"
          && (step === "waiting" || session.controlAt < (onset === null ? ts : onset))) {
          // A pause or quit key of the previous trial's window, which stays open until this
          // pair is flipped, came after that trial's screens were chosen (or reached a busy
          // page after this pair was flipped): as in the lab, it takes effect right after
          // that trial. This pair is withdrawn (before it is on screen, or as soon as the key
          // is seen) and comes again, whole, after the screens.
          stage.style.visibility = "hidden";
          display_element.innerHTML = "";
          session.current = null; // set by this pair alone, if it came on
          this.jsPsych.finishTrial({ trial: trial.trial, withdrawn: true });
          return;
        }
        if (step === "waiting") {
          if (ts >= earliest) {
            stage.style.visibility = "visible";
            step = "showing";
          }
          session.frame(ts);
        } else if (step === "showing") {
          onset = ts;
          session.startTrial(ts);
          session.current = { trial: trial.trial, onset };
          session.onsets.push({ trial: trial.trial, onset, window_end: null });
          step = "stimulus";
          if (ts >= onset + shown - 1.5 * period) {
            stage.style.visibility = "hidden";
            step = "hiding";
          }
        } else if (step === "stimulus") {
          session.frame(ts);
          if (ts >= onset + shown - 1.5 * period) {
            stage.style.visibility = "hidden";
            step = "hiding";
          }
        } else if (step === "hiding") {
          session.frame(ts);
          blankOnset = ts;
          session.onsets[session.onsets.length - 1].window_end = blankOnset + blank;
          step = "blank";
        } else if (step === "blank") {
          session.frame(ts);
        }
        if (step === "blank" && ts >= blankOnset + blank - 2.5 * period) {
          session.pending = { trial, onset, blankOnset, pausedBefore: session.pausedBefore };
          session.pausedBefore = 0;
          session.nominalNext = blankOnset + blank;
          session.nextOnsetTarget = blankOnset + blank - 1.5 * period;
          session.current = null;
          display_element.innerHTML = "";
          this.jsPsych.finishTrial({ trial: trial.trial, onset, blank_onset: blankOnset });
          return;
        }
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    }
  }
  SbirRatingPlugin.info = info;
  return SbirRatingPlugin;
})(jsPsychModule);
