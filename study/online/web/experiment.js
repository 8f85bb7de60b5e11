/*
 * The browser session of sbir-study: consent, participant details, full screen and window
 * check, then the protocol's trials (anchoring with the prescribed ratings, the main block
 * with the anchor repeats, instructions, pauses, breaks, Escape with confirmation), each
 * trial sent to the server as soon as its window closes; a reload resumes at the next
 * unrecorded trial. Settings come from the server (api/config): nothing is hard-coded here.
 */
/* global initJsPsych, jsPsychHtmlButtonResponse, jsPsychSurveyHtmlForm, jsPsychFullscreen,
   jsPsychBrowserCheck, jsPsychPreload, jsPsychHtmlKeyboardResponse, jsPsychSbirRating,
   SbirSession */
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
  const jsPsych = initJsPsych({ display_element: stageElement() });
  const timeline = [];
  if (!resuming) {
    timeline.push({
      type: jsPsychHtmlButtonResponse,
      stimulus: `<div class="sbir-text"><h2>Consent</h2>${paragraphs(config.online.consent)}</div>`,
      choices: ["I agree", "I do not agree"],
      button_html: (choice, index) => `<button class="jspsych-btn" id="sbir-consent-${index}">${choice}</button>`,
      on_finish: (data) => { result.consent = data.response === 0; },
    });
    if (config.online.details) {
      timeline.push({
        timeline: [{
          type: jsPsychSurveyHtmlForm,
          preamble: "<h2>About you</h2><p>Each answer is optional.</p>",
          html: `<p><label>Age (years) <input name="age" id="sbir-age" type="number" min="5" max="120"></label></p>
            <p><label>Sex <select name="sex" id="sbir-sex"><option value="">prefer not to say</option>
              <option value="female">female</option><option value="male">male</option>
              <option value="other">other</option></select></label></p>
            <p><label>Handedness <select name="handedness" id="sbir-handedness">
              <option value="">prefer not to say</option><option value="right">right</option>
              <option value="left">left</option><option value="ambidextrous">ambidextrous</option>
              </select></label></p>`,
          button_label: "Continue",
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
        message: "<div class='sbir-text'><p>The study runs in full screen. Please close other " +
          "programs and keep this window in front until the end.</p></div>",
        button_label: "Continue in full screen",
      },
      {
        type: jsPsychBrowserCheck,
        features: ["width", "height", "browser", "browser_version", "mobile", "os", "fullscreen", "vsync_rate"],
        vsync_frame_count: 60,
        minimum_width: config.display.minimum_width,
        minimum_height: config.display.minimum_height,
        window_resize_message: `<div class="sbir-text"><p>Your browser window is too small to show
          the pictures at their size. Please enlarge it (or zoom out with Ctrl and minus) to at
          least <span id="browser-check-min-width"></span> x <span id="browser-check-min-height"></span>
          pixels.</p><p>It is now <span id="browser-check-actual-width"></span> x
          <span id="browser-check-actual-height"></span> pixels.</p></div>`,
        resize_fail_button_text: "I cannot make it larger",
        inclusion_function: (data) => !data.mobile,
        exclusion_message: (data) => data.mobile
          ? "<p>This study needs a computer with a keyboard; it cannot run on a phone or tablet.</p>"
          : "<p>This study needs a larger browser window; it cannot run on this screen. Nothing " +
            "was recorded.</p>",
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

/* Part 2: the trials, from the next unrecorded one. */
async function trialsPart(config, state, token) {
  const session = new SbirSession(config, state, token);
  window.sbir.session = session;
  if (state.environment && state.environment.refresh_hz) session.period = 1 / state.environment.refresh_hz;
  session.sender.kick(); // trials kept from before a reload go first
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
      // Time spent on a pause, break or instructions screen is the next trial's paused_before.
      if (extra.phase !== "quit") session.pausedBefore += (data.rt || 0) / 1000;
      if (extra.on_finish) extra.on_finish(data);
    },
  });

  const timeline = [];
  timeline.push({
    type: jsPsychPreload,
    images: trials.slice(start).flatMap((t) => [t.sketch_url, t.image_url]),
    auto_preload: false,
    show_progress_bar: true,
    message: "<p>Loading the pictures ...</p>",
    continue_after_error: false,
    error_message: "<p>The pictures could not be loaded. Please check your connection and reload this page.</p>",
  });
  const opening = start === firstRated || trials[start].phase !== "anchor_demo"
    ? instructions.main : instructions.anchoring;
  const welcome = start > 0 ? "Welcome back: the session continues where it stopped.\n\n" : "";
  timeline.push(message(welcome + opening, [" "], {
    phase: "instructions",
    on_finish: () => {
      session.pausedBefore = 0;
      session.sessionStart = performance.now() / 1000 - state.resumed_at;
    },
  }));
  for (let index = start; index < trials.length; index += 1) {
    const trial = trials[index];
    if (index === firstRated && index !== start) {
      timeline.push(message(instructions.main, [" "], { phase: "instructions" }));
    }
    timeline.push({
      type: jsPsychSbirRating,
      index,
      on_start: () => { window.sbir.phase = "trial"; },
    });
    const last = index + 1 === trials.length;
    timeline.push({
      timeline: [message("End the session now? Everything so far is saved.\n\nY = end, N = go on", ["y", "n"], {
        phase: "quit",
        on_finish: (data) => {
          if (data.response === "y") {
            ended = true;
            jsPsych.abortExperiment();
          } else if (!document.fullscreenElement && document.documentElement.requestFullscreen) {
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
    if (last) break;
    const every = config.pauses.break_every;
    timeline.push({
      timeline: [message(instructions.pause, [" "], { phase: "pause" })],
      conditional_function: () => {
        const asked = session.pauseRequested;
        session.pauseRequested = false;
        const scheduled = Boolean(every) && trial.phase !== "anchor_demo" && ratedSoFar[index] % every === 0;
        return asked || scheduled;
      },
    });
  }
  await jsPsych.run(timeline);
  if (ended) return "incomplete";
  // The last trial's blank ends with the end screen.
  page(`<div class="sbir-text"><p>Saving your answers ...</p></div>`);
  session.messageShown();
  window.sbir.phase = "saving";
  return "complete";
}

async function finish(session, status, token) {
  await session.settled(); // the last trial recorded and every trial acknowledged
  for (let attempt = 0; ; attempt += 1) {
    const answer = await api("POST", `api/sessions/${session.state.session_id}/finish`, { status }, token).catch(() => null);
    if (answer && answer.ok) return answer.content;
    if (answer && answer.status >= 400 && answer.status < 500 && (answer.status !== 409 || attempt >= 5)) {
      throw new Error(answer.content ? answer.content.error : `finish refused (${answer.status})`);
    }
    await new Promise((done) => setTimeout(done, Math.min(1000 * 2 ** attempt, 15000)));
  }
}

function completionPage(config, result) {
  if (document.fullscreenElement && document.exitFullscreen) document.exitFullscreen().catch(() => {});
  window.sbir.phase = "complete";
  window.sbir.finished = result;
  const completion = result.completion || {};
  let html = paragraphs(config.instructions.end);
  if (completion.code) html += `<p>Your completion code: <strong id="sbir-code">${escapeHtml(completion.code)}</strong></p>`;
  if (completion.url) {
    html += `<p>You will be taken back in a moment, or <a id="sbir-return" href="${escapeHtml(completion.url)}">continue here</a>.</p>`;
  }
  page(`<div class="sbir-text">${html}</div>`);
  if (completion.url) setTimeout(() => { window.location.assign(completion.url); }, 3000);
}

async function main() {
  const configAnswer = await api("GET", "api/config");
  if (!configAnswer.ok) throw new Error("the study's settings could not be loaded");
  const config = configAnswer.content;
  window.sbir.config = config;
  const parameters = urlParameters();
  const key = savedSessionKey(config);
  let saved = JSON.parse(localStorage.getItem(key) || "null");
  // The id as the address gives it; the server makes the participant label of it.
  const label = parameters.PROLIFIC_PID || parameters.participant;
  if (label) {
    // Checked on the first screen, before consent: a bad id is found before anything is asked.
    const checked = await api("POST", "api/participant-id", { participant: label }).catch(() => null);
    if (checked && checked.status === 422) {
      page(`<div class="sbir-text"><p id="sbir-bad-id">${escapeHtml((checked.content && checked.content.error) || "This participant id cannot be used.")}</p></div>`);
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
  if (state && state.status !== "running") {
    page(`<div class="sbir-text"><p>This session has ended. Thank you.</p></div>`);
    window.sbir.phase = "ended";
    return;
  }
  window.sbir.phase = "intake";
  const intakeResult = await intake(config, Boolean(state));
  if (!intakeResult.consent) {
    page(`<div class="sbir-text"><p>You did not consent, so nothing was recorded. You may close this page.</p></div>`);
    window.sbir.phase = "declined";
    return;
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
      await new Promise((done) => setTimeout(done, 500 * 2 ** attempt));
    }
    if (!answer || !answer.ok) {
      page(`<div class="sbir-text"><p>${escapeHtml((answer.content && answer.content.error) || "The session could not start.")}</p></div>`);
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
    await finish(session, "incomplete", token);
    page(`<div class="sbir-text"><p>The session has ended. Everything so far is saved. Thank you.</p></div>`);
    window.sbir.phase = "ended";
    return;
  }
  const result = await finish(session, "complete", token);
  completionPage(config, result);
}

main().catch((error) => {
  window.sbir.phase = "error";
  window.sbir.error = String(error);
  page(`<div class="sbir-text"><p>Something went wrong: ${escapeHtml(String(error))}</p>
    <p>Please reload this page; the session continues where it stopped.</p></div>`);
});
