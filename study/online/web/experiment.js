/*
 * The browser session of sbir-study: consent, participant details, full screen and window
 * check, then the protocol's trials (anchoring with the prescribed ratings, the main block
 * with the anchor repeats, instructions, pauses, breaks, Escape with confirmation), each
 * trial sent to the server as soon as its window closes; a reload resumes at the next
 * unrecorded trial. Settings come from the server (api/config): nothing is hard-coded here.
 */
/* global initJsPsych, jsPsychHtmlButtonResponse, jsPsychSurveyHtmlForm, jsPsychFullscreen,
   jsPsychBrowserCheck, jsPsychPreload, jsPsychHtmlKeyboardResponse, jsPsychSbirRating,
   SbirSession, SbirSender */
"use strict";

window.sbir = { session: null, config: null, phase: "loading", finished: null, error: null };

async function api(method, path, body, token) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const answer = await fetch(path, {
    method, headers, cache: "no-store", body: body === undefined ? undefined : JSON.stringify(body),
  });
  let content = null;
  try { content = await answer.json(); } catch (error) { content = null; }
  return { status: answer.status, ok: answer.ok, content };
}

function escapeHtml(text) {
  const element = document.createElement("div");
  element.textContent = text;
  return element.innerHTML;
}

/**
 * The protocol's text `name` ([texts]) with its placeholders filled: `{key}` by `values[key]`
 * (escaped unless listed in `html`), `{{` and `}}` as single braces, as Python's str.format.
 */
function text(config, name, values = {}, html = []) {
  return String(config.texts[name]).replace(/\{\{|\}\}|\{(\w+)\}/g, (match, key) => {
    if (match === "{{") return "{";
    if (match === "}}") return "}";
    if (!(key in values)) return match;
    return html.includes(key) ? String(values[key]) : escapeHtml(String(values[key]));
  });
}

/** A text of the protocol as HTML paragraphs (a blank line between paragraphs). */
function paragraphs(text) {
  return String(text).split(/\n\s*\n/).map((p) => `<p>${escapeHtml(p).replace(/\n/g, "<br>")}</p>`).join("");
}

/** A fresh element for one jsPsych run (each part of the session has its own instance). */
function stageElement() {
  document.body.innerHTML = "";
  const element = document.createElement("div");
  element.className = "sbir-part";
  document.body.appendChild(element);
  return element;
}

function page(html) {
  document.body.innerHTML = `<div class="sbir-page">${html}</div>`;
}

function urlParameters() {
  const query = new URLSearchParams(window.location.search);
  const found = {};
  for (const name of ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "participant"]) {
    const value = query.get(name);
    if (value) found[name] = value;
  }
  return found;
}

function randomHex(bytes) {
  const values = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(values, (v) => v.toString(16).padStart(2, "0")).join("");
}

function randomToken() {
  const values = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...values)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function savedSessionKey(config) {
  return `sbir-session:${config.study}:${config.task}`;
}

/* Part 1: consent, details, full screen, window and refresh check; nothing stored before. */
async function intake(config, resuming) {
  const result = { consent: resuming, details: {}, check: null };
  const word = (name) => escapeHtml(text(config, name));
  const jsPsych = initJsPsych({ display_element: stageElement() });
  const timeline = [];
  if (!resuming) {
    timeline.push({
      type: jsPsychHtmlButtonResponse,
      stimulus: `<div class="sbir-text"><h2>${escapeHtml(text(config, "consent_title"))}</h2>${paragraphs(config.online.consent)}</div>`,
      choices: [text(config, "agree"), text(config, "disagree")],
      button_html: (choice, index) => `<button class="jspsych-btn" id="sbir-consent-${index}">${choice}</button>`,
      on_finish: (data) => { result.consent = data.response === 0; },
    });
    if (config.online.details) {
      timeline.push({
        timeline: [{
          type: jsPsychSurveyHtmlForm,
          preamble: `<h2>${word("details_title")}</h2><p>${word("details_note")}</p>`,
          html: `<p><label>${word("age")} <input name="age" id="sbir-age" type="number" min="5" max="120"></label></p>
            <p><label>${word("sex")} <select name="sex" id="sbir-sex"><option value="">${word("prefer_not_to_say")}</option>
              <option value="female">${word("female")}</option><option value="male">${word("male")}</option>
              <option value="other">${word("other")}</option></select></label></p>
            <p><label>${word("handedness")} <select name="handedness" id="sbir-handedness">
              <option value="">${word("prefer_not_to_say")}</option><option value="right">${word("right")}</option>
              <option value="left">${word("left")}</option><option value="ambidextrous">${word("ambidextrous")}</option>
              </select></label></p>`,
          button_label: text(config, "continue_button"),
          on_finish: (data) => {
            const answer = data.response;
            const age = parseInt(answer.age, 10);
            result.details = {
              age: Number.isFinite(age) && age >= 5 && age <= 120 ? age : null,
              sex: answer.sex || null,
              handedness: answer.handedness || null,
            };
          },
        }],
        conditional_function: () => result.consent,
      });
    }
  }
  timeline.push({
    timeline: [
      {
        type: jsPsychFullscreen,
        fullscreen_mode: true,
        message: `<div class="sbir-text">${paragraphs(text(config, "fullscreen"))}</div>`,
        button_label: text(config, "fullscreen_button"),
      },
      {
        type: jsPsychBrowserCheck,
        features: ["width", "height", "browser", "browser_version", "mobile", "os", "fullscreen", "vsync_rate"],
        vsync_frame_count: 60,
        minimum_width: config.display.minimum_width,
        minimum_height: config.display.minimum_height,
        // The plugin keeps the four numbers up to date in these spans while the window is resized.
        window_resize_message: `<div class="sbir-text">${String(config.texts.window_too_small)
          .split(/\n\s*\n/).map((p) => `<p>${text({ texts: { p } }, "p", {
            min_width: '<span id="browser-check-min-width"></span>',
            min_height: '<span id="browser-check-min-height"></span>',
            width: '<span id="browser-check-actual-width"></span>',
            height: '<span id="browser-check-actual-height"></span>',
          }, ["min_width", "min_height", "width", "height"])}</p>`).join("")}</div>`,
        resize_fail_button_text: text(config, "cannot_enlarge"),
        inclusion_function: (data) => !data.mobile,
        exclusion_message: (data) => paragraphs(text(config, data.mobile ? "needs_keyboard" : "screen_too_small")),
        on_finish: (data) => { result.check = data; },
      },
    ],
    conditional_function: () => result.consent,
  });
  await jsPsych.run(timeline);
  return result;
}

function environment(check) {
  return {
    user_agent: navigator.userAgent.slice(0, 512),
    browser: String(check.browser || "").slice(0, 64),
    browser_version: String(check.browser_version || "").slice(0, 64),
    os: String(check.os || "").slice(0, 64),
    mobile: Boolean(check.mobile),
    screen_width: window.screen.width,
    screen_height: window.screen.height,
    window_width: check.width,
    window_height: check.height,
    device_pixel_ratio: window.devicePixelRatio || 1,
    refresh_hz: Number.isFinite(check.vsync_rate) && check.vsync_rate > 0 ? check.vsync_rate : null,
    fullscreen: Boolean(document.fullscreenElement),
  };
}

/**
 * Where on the session's clock the trials resume (s): the end of the server's last stored
 * trial (`state.resumed_at`), or of a later one this page still holds unsent, so that the
 * next trial begins after it (the server refuses a trial that begins before the one before
 * it ended).
 */
function resumedAt(state, queue) {
  return queue.reduce(
    (latest, item) => Math.max(latest, item.body.next_onset - item.body.session_start),
    state.resumed_at || 0,
  );
}

/* Part 2: the trials, from the next unrecorded one. */
async function trialsPart(config, state, token) {
  const session = new SbirSession(config, state, token);
  window.sbir.session = session;
  if (state.environment && state.environment.refresh_hz) session.period = 1 / state.environment.refresh_hz;
  session.sender.kick(); // trials kept from before a reload go first
  state.resumed_at = resumedAt(state, session.sender.queue);
  const trials = state.trials;
  const start = Math.max(state.next_trial, session.sender.highestQueued() + 1) - 1;
  if (start >= trials.length) return "complete";
  const firstRated = trials.findIndex((t) => t.phase !== "anchor_demo");
  const instructions = config.instructions;
  let ended = false;
  const ratedSoFar = []; // rated trials up to and including each index (for scheduled breaks)
  trials.reduce((count, t, k) => (ratedSoFar[k] = count + (t.phase !== "anchor_demo")), 0);
  const jsPsych = initJsPsych({ display_element: stageElement() });

  const message = (text, keys, extra = {}) => ({
    type: jsPsychHtmlKeyboardResponse,
    stimulus: `<div class="sbir-text">${paragraphs(text)}</div>`,
    choices: keys,
    on_load: () => { session.messageShown(); window.sbir.phase = extra.phase || "message"; },
    on_finish: (data) => {
      // As in the lab, the next pair comes one blank after the key that ended the screen;
      // the time spent on it and that blank are the next trial's paused_before.
      if (extra.on_finish) extra.on_finish(data);
      else session.resume(session.lastKeyTime());
    },
  });

  const timeline = [];
  timeline.push({
    type: jsPsychPreload,
    images: trials.slice(start).flatMap((t) => [t.sketch_url, t.image_url]),
    auto_preload: false,
    show_progress_bar: true,
    message: paragraphs(text(config, "loading")),
    continue_after_error: false,
    error_message: paragraphs(text(config, "loading_failed")),
  });
  const opening = start === firstRated || trials[start].phase !== "anchor_demo"
    ? instructions.main : instructions.anchoring;
  const welcome = start > 0 ? `${text(config, "welcome_back")}\n\n` : "";
  timeline.push(message(welcome + opening, [" "], {
    phase: "instructions",
    on_finish: () => session.begin(session.lastKeyTime(), start > 0),
  }));
  for (let index = start; index < trials.length; index += 1) {
    const trial = trials[index];
    if (index === firstRated && index !== start) {
      timeline.push(message(instructions.main, [" "], { phase: "instructions" }));
    }
    // A pair withdrawn before it was on screen (a pause or quit key of the previous trial's
    // window came after that trial's screens were chosen) comes again after the screens.
    let withdrawn = false;
    const group = [{
      type: jsPsychSbirRating,
      index,
      on_start: () => { window.sbir.phase = "trial"; withdrawn = false; },
      on_finish: (data) => { withdrawn = Boolean(data.withdrawn); },
    }];
    const last = index + 1 === trials.length;
    group.push({
      // The answer keys are the protocol's ([texts] yes_key, no_key: a letter or digit).
      timeline: [message(text(config, "quit_question"), [config.texts.yes_key, config.texts.no_key], {
        phase: "quit",
        on_finish: (data) => {
          if (data.response === config.texts.yes_key) {
            ended = true;
            jsPsych.abortExperiment();
            return;
          }
          session.resume(session.lastKeyTime());
          if (!document.fullscreenElement && document.documentElement.requestFullscreen) {
            document.documentElement.requestFullscreen().catch(() => {});
          }
        },
      })],
      conditional_function: () => {
        const asked = session.quitRequested;
        session.quitRequested = false;
        return asked;
      },
    });
    const every = config.pauses.break_every;
    group.push({
      timeline: [message(instructions.pause, [" "], { phase: "pause" })],
      conditional_function: () => {
        const asked = session.pauseRequested;
        session.pauseRequested = false;
        // After the last pair, only a pause asked for before it came (it was withdrawn); a
        // scheduled break, only after a pair that was shown.
        const scheduled = !withdrawn && !last && Boolean(every) && trial.phase !== "anchor_demo"
          && ratedSoFar[index] % every === 0;
        return (asked && (!last || withdrawn)) || scheduled;
      },
    });
    timeline.push({ timeline: group, loop_function: () => withdrawn });
  }
  await jsPsych.run(timeline);
  if (ended) return "incomplete";
  // The last trial's blank ends with the end screen.
  page(`<div class="sbir-text">${paragraphs(text(config, "saving"))}</div>`);
  session.messageShown();
  window.sbir.phase = "saving";
  return "complete";
}

async function finish(session, status, token) {
  await session.settled(); // the last trial recorded and every trial acknowledged
  // The keys of the last screens (the quit question answered, the end) go with the finish.
  const keys = session.finalKeys ? session.finalKeys() : {};
  const body = { status, ...keys };
  for (let attempt = 0; ; attempt += 1) {
    const answer = await api("POST", `api/sessions/${session.state.session_id}/finish`, body, token).catch(() => null);
    if (answer && answer.ok) return answer.content;
    if (answer && answer.status >= 400 && answer.status < 500 && (answer.status !== 409 || attempt >= 5)) {
      throw new Error(answer.content ? answer.content.error : `finish refused (${answer.status})`);
    }
    // Each wait drawn between half and one and a half times the delay, as the trial queue's:
    // pages that lost the server together do not all come back at the same moment.
    await new Promise((done) => setTimeout(done, Math.min(1000 * 2 ** attempt, 15000) * (0.5 + Math.random())));
  }
}

/**
 * The page of an ending: its text, then the code and the address the protocol sets for it
 * ([online]: completion_code/_url for a complete session, no_consent_, quit_, timed_out_).
 */
function endingPage(config, phase, ending, body, last = "") {
  if (document.fullscreenElement && document.exitFullscreen) document.exitFullscreen().catch(() => {});
  window.sbir.phase = phase;
  window.sbir.ending = ending || {};
  const completion = ending || {};
  let html = body;
  if (completion.code) {
    const code = `<strong id="sbir-code">${escapeHtml(completion.code)}</strong>`;
    html += `<p>${text(config, "completion_code", { code }, ["code"])}</p>`;
  }
  if (completion.url) {
    html += `<p>${escapeHtml(text(config, "completion_redirect"))} <a id="sbir-return" href="${escapeHtml(completion.url)}">${escapeHtml(text(config, "completion_link"))}</a></p>`;
  }
  page(`<div class="sbir-text">${html}${last}</div>`);
  if (completion.url) setTimeout(() => { window.location.assign(completion.url); }, 3000);
}

function completionPage(config, result) {
  window.sbir.finished = result;
  // Not the lab's end text ([instructions] end), which waits for a space bar that no page
  // can close its window with: what is true here, in the protocol's words ([texts]).
  const completion = result.completion || {};
  const close = completion.url ? "" : `<p id="sbir-close">${escapeHtml(text(config, "close_window"))}</p>`;
  endingPage(config, "complete", completion, paragraphs(text(config, "complete_ended")), close);
}

async function main() {
  const configAnswer = await api("GET", "api/config").catch(() => null);
  if (!configAnswer || !configAnswer.ok) {
    // The protocol's words for this came with the page itself (index.html as the server fills
    // it); the value goes in unescaped, as paragraphs() escapes the whole text once.
    const words = document.body.dataset;
    window.sbir.phase = "error";
    window.sbir.error = words.settingsFailed;
    const said = text({ texts: { went_wrong: words.wentWrong } }, "went_wrong",
      { error: words.settingsFailed }, ["error"]);
    page(`<div class="sbir-text">${paragraphs(said)}</div>`);
    return;
  }
  const config = configAnswer.content;
  window.sbir.config = config;
  document.documentElement.lang = config.texts.language;
  document.title = config.texts.page_title;
  const parameters = urlParameters();
  const key = savedSessionKey(config);
  let saved = JSON.parse(localStorage.getItem(key) || "null");
  // The id as the address gives it; the server makes the participant label of it.
  const label = parameters.PROLIFIC_PID || parameters.participant;
  if (label) {
    // Checked on the first screen, before consent: a bad id is found before anything is asked.
    const checked = await api("POST", "api/participant-id", { participant: label }).catch(() => null);
    if (checked && checked.status === 422) {
      page(`<div class="sbir-text"><p id="sbir-bad-id">${escapeHtml((checked.content && checked.content.error) || text(config, "could_not_start"))}</p></div>`);
      window.sbir.phase = "refused";
      window.sbir.error = checked.content;
      return;
    }
  }
  if (saved && label && saved.participant !== label) saved = null; // another participant's browser
  let state = null;
  if (saved) {
    const answer = await api("GET", `api/sessions/${saved.session_id}`, undefined, saved.token);
    if (answer.ok) state = answer.content;
    else if (answer.status === 403 || answer.status === 404) localStorage.removeItem(key);
    else throw new Error((answer.content && answer.content.error) || `the server answered ${answer.status}`);
  }
  if (state && state.status === "complete") return completionPage(config, { completion: state.completion });
  if (state && state.status === "timed_out") {
    return endingPage(config, "timed_out", state.completion, paragraphs(text(config, "timed_out_ended")));
  }
  if (state && state.status !== "running") {
    return endingPage(config, "ended", state.completion, paragraphs(text(config, "session_ended")));
  }
  if (state && state.timed_out) {
    // Back after the dropout time without contact: the trials still held here are sent, then
    // the session ends as timed out (its place in the list went to the next participant).
    window.sbir.phase = "saving";
    const sender = new SbirSender(state.session_id, saved.token);
    const result = await finish({ state, settled: () => sender.drain() }, "timed_out", saved.token);
    window.sbir.finished = result;
    return endingPage(config, "timed_out", result.completion, paragraphs(text(config, "timed_out_ended")));
  }
  window.sbir.phase = "intake";
  const intakeResult = await intake(config, Boolean(state));
  if (!intakeResult.consent) {
    return endingPage(config, "declined", config.online.no_consent, paragraphs(text(config, "declined")));
  }
  if (!intakeResult.check) {
    window.sbir.phase = "excluded";
    return; // the window check ended the experiment with its message
  }
  let token = saved ? saved.token : null;
  if (!state) {
    // The token (and a label when the address has none) are drawn here and kept before
    // asking, so that asking again after a lost answer finds the same session.
    const pending = JSON.parse(localStorage.getItem(`${key}:pending`) || "null");
    const start = pending && (!label || pending.participant === label) ? pending
      : { participant: label || `web${randomHex(6)}`, token: randomToken() };
    localStorage.setItem(`${key}:pending`, JSON.stringify(start));
    let answer = null;
    for (let attempt = 0; attempt < 8; attempt += 1) {
      answer = await api("POST", "api/sessions", {
        participant: start.participant, token: start.token, url_parameters: parameters,
        details: intakeResult.details, environment: environment(intakeResult.check),
      }).catch(() => null);
      if (answer && answer.status < 500) break;
      await new Promise((done) => setTimeout(done, 500 * 2 ** attempt * (0.5 + Math.random())));
    }
    if (!answer || !answer.ok) {
      page(`<div class="sbir-text"><p>${escapeHtml((answer.content && answer.content.error) || text(config, "could_not_start"))}</p></div>`);
      window.sbir.phase = "refused";
      window.sbir.error = answer.content;
      return;
    }
    state = answer.content;
    token = start.token;
    // The id as given (not the label), as the address gives it on a reload.
    localStorage.setItem(key, JSON.stringify({ session_id: state.session_id, token, participant: start.participant }));
    localStorage.removeItem(`${key}:pending`);
  }
  state.environment = environment(intakeResult.check);
  const status = await trialsPart(config, state, token);
  const session = window.sbir.session;
  if (status === "incomplete") {
    window.sbir.phase = "saving";
    const result = await finish(session, "incomplete", token);
    window.sbir.finished = result;
    return endingPage(config, "ended", result.completion, quitWords(config));
  }
  const result = await finish(session, "complete", token);
  completionPage(config, result);
}

/**
 * The trials of this page's session that the server refused: its sender set each aside
 * (never to send again), and the server kept each for the experimenter's status.
 */
function refusedTrials() {
  const session = window.sbir.session;
  if (!session || !session.sender) return [];
  try {
    return JSON.parse(localStorage.getItem(session.sender.refusedKey) || "[]");
  } catch (error) {
    return [];
  }
}

/** Which trials could not be stored, in the protocol's words ("" when every one was). */
function notStoredWords(config) {
  const refused = config.texts.trials_not_stored ? refusedTrials() : [];
  if (!refused.length) return "";
  const trials = [...new Set(refused.map((item) => item.trial))].sort((a, b) => a - b).join(", ");
  return `<div id="sbir-not-stored">${paragraphs(text(config, "trials_not_stored", { trials }))}</div>`;
}

/**
 * The words after the participant chose to end the session: quit_ended says everything so
 * far is saved, which is not true when the server refused trials; then the session's end
 * and the trials not stored.
 */
function quitWords(config) {
  const notStored = notStoredWords(config);
  if (!notStored) return paragraphs(text(config, "quit_ended"));
  return paragraphs(text(config, "session_ended")) + notStored;
}

/** The error page: what went wrong, and which trials could not be stored (if any). */
function errorPage(error) {
  window.sbir.phase = "error";
  window.sbir.error = String(error);
  // Before the settings are in, the protocol's words are those the page came with.
  const config = window.sbir.config || { texts: { went_wrong: document.body.dataset.wentWrong } };
  const html = paragraphs(text(config, "went_wrong", { error: String(error) })) + notStoredWords(config);
  page(`<div class="sbir-text">${html}</div>`);
}

main().catch(errorPage);
