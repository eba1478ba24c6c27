// The person's page of `toolgate serve`: plain JavaScript, no build step, no library.
// Everything shown comes from the same API as every client's (GET /permission, /question,
// /answers, /approvals, /audit, /shell), refetched when the event stream (/event) says
// something changed. Text from the server is only ever set as text, never as HTML.
"use strict";

const state = { csrf: null, ask: null, seenAsks: new Set(), first: true, shells: true };

const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text nodes). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  return el;
}

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** A call to the API; what changes state carries the session's CSRF token. */
async function api(path, { method = "GET", body } = {}) {
  const headers = {};
  if (method !== "GET") {
    if (state.csrf) headers["X-Toolgate-CSRF"] = state.csrf;
    headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    cache: "no-store",
  });
  let data = null;
  try {
    data = await response.json();
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    throw new HttpError(response.status, (data && data.error) || `${response.status} ${response.statusText}`);
  }
  return data;
}

function showError(error) {
  $("error").textContent = error ? String(error.message || error) : "";
}

function announce(text) {
  // Emptied first so the same text twice is announced twice.
  $("announce").textContent = "";
  window.setTimeout(() => {
    $("announce").textContent = text;
  }, 50);
}

function time(value) {
  if (value === undefined || value === null) return "";
  const date = typeof value === "number" ? new Date(value) : new Date(String(value));
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

// ---------------------------------------------------------------- login

async function start() {
  try {
    const me = await api("/whoami");
    state.csrf = me.csrf;
    state.ask = me.ask;
    $("project").textContent = me.project ? `project ${me.project}` : "";
    showApp();
  } catch (error) {
    if (error.status === 401) showLogin();
    else showLogin(error.message);
  }
}

function showLogin(message) {
  $("app").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("token").focus();
}

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("login-error").textContent = "";
  try {
    const answer = await api("/login", { method: "POST", body: { token: $("token").value } });
    $("token").value = "";
    state.csrf = answer.csrf;
    await start();
  } catch (error) {
    $("login-error").textContent = error.message;
  }
});

$("logout").addEventListener("click", async () => {
  try {
    await api("/logout", { method: "POST" });
  } catch (_) {
    // Logged out either way, as far as this page is concerned.
  }
  if (state.events) state.events.close();
  state.csrf = null;
  showLogin();
});

function showApp() {
  $("login").hidden = true;
  $("app").hidden = false;
  $("logout").hidden = false;
  const limited = Boolean(state.ask);
  for (const el of document.querySelectorAll(".full-only")) el.hidden = limited;
  $("questions").hidden = limited;
  if (limited) {
    $("scope-note").hidden = false;
    $("scope-note").textContent = `This login came from a link for permission request ${state.ask}: it shows that ask only. Enter the token for the rest.`;
  }
  if (!limited) $("shells").hidden = !state.shells;
  connect();
  refreshAll();
}

// ---------------------------------------------------------------- events

function connect() {
  if (state.events) state.events.close();
  // EventSource sends the session cookie (same origin); it cannot send headers.
  const events = new EventSource("/event");
  state.events = events;
  const live = $("live");
  events.onopen = () => {
    live.textContent = "live";
    live.className = "badge on";
    // Whatever happened while disconnected: fetch again.
    refreshAll();
  };
  events.onerror = () => {
    live.textContent = "reconnecting…";
    live.className = "badge off";
  };
  const on = (names, refresh) => {
    for (const name of names) events.addEventListener(name, refresh);
  };
  on(["permission.asked", "permission.replied"], () => {
    refreshAsks();
    refreshAnswers();
    if (!state.ask) refreshApprovals();
  });
  on(["question.asked", "question.replied", "question.rejected"], () => {
    if (!state.ask) refreshQuestions();
    refreshAnswers();
  });
  on(["tool.settled", "tool.failed", "tool.cancelled"], () => {
    if (!state.ask) debounced("audit", refreshAudit, 500);
  });
  on(["shell.started", "shell.exited", "shell.output"], () => {
    if (!state.ask && state.shells) debounced("shells", refreshShells, 300);
  });
  on(["events.lagged"], () => refreshAll());
}

const timers = {};
function debounced(key, fn, ms) {
  window.clearTimeout(timers[key]);
  timers[key] = window.setTimeout(fn, ms);
}

function refreshAll() {
  refreshAsks();
  refreshAnswers();
  if (!state.ask) {
    refreshQuestions();
    refreshApprovals();
    refreshAudit();
    if (state.shells) refreshShells();
  }
}

/** Runs a refresh, showing its error; a 401 means the session is gone. */
async function guarded(work) {
  try {
    await work();
  } catch (error) {
    if (error.status === 401) {
      if (state.events) state.events.close();
      showLogin("Your session ended; log in again.");
    } else {
      showError(error);
    }
  }
}

// ---------------------------------------------------------------- permission asks

/** The lines of a unified diff as table rows, with old and new line numbers. */
function diffTable(diff) {
  const rows = [];
  let oldLine = 0;
  let newLine = 0;
  const lines = String(diff).split("\n");
  // A diff ends with a newline: no empty last line.
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  for (const line of lines) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    let kind = "ctx";
    let left = "";
    let right = "";
    if (hunk) {
      oldLine = Number(hunk[1]);
      newLine = Number(hunk[2]);
      kind = "hunk";
    } else if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ") || line.startsWith("Index:") || line.startsWith("=====")) {
      kind = "meta";
    } else if (line.startsWith("+")) {
      kind = "add";
      right = newLine++;
    } else if (line.startsWith("-")) {
      kind = "del";
      left = oldLine++;
    } else if (line.startsWith("\\")) {
      kind = "meta";
    } else {
      left = oldLine ? oldLine++ : "";
      right = newLine ? newLine++ : "";
    }
    const label = { add: "added", del: "removed", hunk: "", meta: "", ctx: "" }[kind];
    rows.push(
      h("tr", { class: kind },
        h("td", { class: "num" }, String(left)),
        h("td", { class: "num" }, String(right)),
        h("td", {}, label ? h("span", { class: "visually-hidden" }, `${label}: `) : null, line)),
    );
  }
  return h("div", { class: "diff-box" },
    h("table", { class: "diff" },
      h("caption", { class: "visually-hidden" }, "Changes: old line number, new line number, line"),
      h("tbody", {}, rows)));
}

function askCard(ask) {
  const meta = ask.metadata || {};
  const feedbackId = `feedback-${ask.id}`;
  const title = `${ask.action}: ${(ask.resources || []).join(", ")}`;
  const details = [
    h("dt", {}, "Action"), h("dd", { class: "mono" }, ask.action),
    h("dt", {}, "Resources"), h("dd", {}, h("ul", { class: "plain" }, (ask.resources || []).map((r) => h("li", { class: "mono" }, r)))),
  ];
  if (ask.allowed && ask.allowed.length) {
    details.push(h("dt", {}, "Already allowed"), h("dd", { class: "mono" }, ask.allowed.join(", ")));
  }
  if (meta.command) details.push(h("dt", {}, "Command"), h("dd", {}, h("pre", {}, String(meta.command))));
  if (meta.filepath) details.push(h("dt", {}, "File"), h("dd", { class: "mono" }, String(meta.filepath)));
  if (meta.exec) details.push(h("dt", {}, "Program"), h("dd", { class: "mono" }, String(meta.exec)));
  if (meta.input) details.push(h("dt", {}, "Input"), h("dd", {}, h("pre", {}, String(meta.input))));
  const save = ask.save || [];
  details.push(
    h("dt", {}, "Allow always saves"),
    h("dd", {}, save.length
      ? [h("ul", { class: "plain" }, save.map((p) => h("li", { class: "mono" }, `${ask.action} ${p}`))),
        h("span", { class: "muted" }, "for this project, in its saved approvals (until removed)")]
      : h("span", { class: "muted" }, "nothing (this ask cannot be saved; Allow always allows it once)")),
  );
  if (ask.unsaveable && ask.unsaveable.length) {
    details.push(h("dt", {}, "Never saved"), h("dd", { class: "mono" }, ask.unsaveable.join(", ")));
  }
  const source = ask.source || {};
  details.push(h("dt", {}, "Call"), h("dd", { class: "mono muted" }, `${source.callID || "-"} (message ${source.messageID || "-"})`));

  const feedback = h("textarea", { id: feedbackId, name: "feedback", rows: "2" });
  const buttons = [];
  const reply = async (kind) => {
    for (const b of buttons) b.disabled = true;
    const body = { reply: kind };
    if (kind === "reject" && feedback.value.trim()) body.message = feedback.value.trim();
    try {
      await api(`/permission/${encodeURIComponent(ask.id)}/reply`, { method: "POST", body });
      showError(null);
      announce(`${kind === "reject" ? "Rejected" : "Allowed"}: ${title}`);
    } catch (error) {
      showError(error);
      for (const b of buttons) b.disabled = false;
    }
    refreshAsks();
    refreshAnswers();
  };
  buttons.push(
    h("button", { type: "button", class: "primary", onclick: () => reply("once") }, "Allow once"),
    h("button", { type: "button", onclick: () => reply("always") }, "Allow always"),
    h("button", { type: "button", class: "danger", onclick: () => reply("reject") }, "Reject"),
  );
  const fresh = !state.first && !state.seenAsks.has(ask.id);
  return h("article", { class: fresh ? "card new" : "card", "aria-label": title, "data-ask": ask.id },
    h("h3", {}, title),
    h("dl", {}, details),
    meta.diff ? diffTable(meta.diff) : null,
    h("div", { class: "actions" },
      h("div", { class: "feedback" },
        h("label", { for: feedbackId }, "Feedback for the model (sent with Reject)"),
        feedback),
      buttons));
}

async function refreshAsks() {
  await guarded(async () => {
    const asks = await api("/permission");
    const list = $("asks-list");
    list.replaceChildren();
    $("asks-count").textContent = asks.length ? String(asks.length) : "";
    if (!asks.length) {
      list.append(h("p", { class: "muted" }, state.ask ? "This ask is not pending (answered, or its call ended)." : "Nothing is waiting for you."));
    }
    const bySession = new Map();
    for (const ask of asks) {
      if (!bySession.has(ask.sessionID)) bySession.set(ask.sessionID, []);
      bySession.get(ask.sessionID).push(ask);
    }
    const fresh = [];
    for (const [session, items] of bySession) {
      list.append(h("div", { class: "session" },
        h("h3", {}, `Session ${session}`),
        items.map(askCard)));
      for (const ask of items) if (!state.seenAsks.has(ask.id)) fresh.push(ask);
    }
    if (!state.first && fresh.length) {
      announce(fresh.map((a) => `New permission ask from session ${a.sessionID}: ${a.action} ${(a.resources || []).join(", ")}`).join(". "));
    }
    for (const ask of asks) state.seenAsks.add(ask.id);
    state.first = false;
    document.title = asks.length ? `(${asks.length}) toolgate` : "toolgate";
  });
}

// ---------------------------------------------------------------- questions

function questionCard(request) {
  const fieldsets = (request.questions || []).map((question, index) => {
    const name = `q-${request.id}-${index}`;
    const type = question.multiple ? "checkbox" : "radio";
    return h("fieldset", {},
      h("legend", {}, question.header ? `${question.header}: ${question.question}` : question.question),
      (question.options || []).map((option, n) => {
        const id = `${name}-${n}`;
        return h("div", {},
          h("input", { type, id, name, value: option.label }),
          " ",
          h("label", { for: id }, option.label),
          option.description ? h("span", { class: "muted" }, ` — ${option.description}`) : null);
      }));
  });
  const send = async () => {
    const answers = (request.questions || []).map((_, index) =>
      [...document.querySelectorAll(`input[name="q-${request.id}-${index}"]:checked`)].map((input) => input.value));
    try {
      await api(`/question/${encodeURIComponent(request.id)}/reply`, { method: "POST", body: { answers } });
      showError(null);
    } catch (error) {
      showError(error);
    }
    refreshQuestions();
  };
  const dismiss = async () => {
    try {
      await api(`/question/${encodeURIComponent(request.id)}/reject`, { method: "POST" });
      showError(null);
    } catch (error) {
      showError(error);
    }
    refreshQuestions();
  };
  return h("article", { class: "card", "aria-label": `Question from session ${request.sessionID}` },
    h("h3", {}, `Session ${request.sessionID}`),
    fieldsets,
    h("div", { class: "actions" },
      h("button", { type: "button", class: "primary", onclick: send }, "Answer"),
      h("button", { type: "button", onclick: dismiss }, "Dismiss")));
}

async function refreshQuestions() {
  await guarded(async () => {
    const questions = await api("/question");
    const list = $("questions-list");
    list.replaceChildren();
    $("questions-count").textContent = questions.length ? String(questions.length) : "";
    if (!questions.length) list.append(h("p", { class: "muted" }, "No question is waiting."));
    for (const request of questions) list.append(questionCard(request));
  });
}

// ---------------------------------------------------------------- answers

async function refreshAnswers() {
  await guarded(async () => {
    const answers = await api("/answers");
    const list = $("answered-list");
    list.replaceChildren();
    if (!answers.length) list.append(h("li", { class: "muted" }, "Nothing answered yet."));
    for (const entry of answers.slice().reverse()) {
      const what = entry.kind === "question"
        ? `question ${(entry.resources || []).join("; ")}`
        : `${entry.action || "permission"} ${(entry.resources || []).join(", ")}`;
      list.append(h("li", {},
        h("strong", {}, entry.reply), " — ", h("span", { class: "mono" }, what),
        h("span", { class: "muted" }, ` (session ${entry.sessionID || "?"}, by ${entry.by}, ${time(entry.time)})`),
        entry.message ? h("div", { class: "muted" }, `feedback: ${entry.message}`) : null));
    }
  });
}

// ---------------------------------------------------------------- saved approvals

async function refreshApprovals() {
  await guarded(async () => {
    const approvals = await api("/approvals");
    const list = $("approvals-list");
    list.replaceChildren();
    if (!approvals.length) list.append(h("tr", {}, h("td", { colspan: "4", class: "muted" }, "No saved approval.")));
    for (const approval of approvals) {
      const remove = async () => {
        try {
          await api(`/approvals/${encodeURIComponent(approval.id)}`, { method: "DELETE" });
          showError(null);
          announce(`Removed the approval ${approval.action} ${approval.resource}`);
        } catch (error) {
          showError(error);
        }
        refreshApprovals();
      };
      list.append(h("tr", { "data-approval": approval.id },
        h("td", { class: "mono" }, approval.action),
        h("td", { class: "mono" }, approval.resource),
        h("td", {}, time(approval.time_created)),
        h("td", {}, h("button", { type: "button", onclick: remove, "aria-label": `Remove ${approval.action} ${approval.resource}` }, "Remove"))));
    }
  });
}

// ---------------------------------------------------------------- audit log

function auditWhat(entry) {
  if (entry.kind === "settled") return entry.error ? `error: ${entry.error}` : "settled";
  if (entry.kind === "auth_failed") return `${entry.method || ""} ${entry.path || ""}: ${entry.reason || ""}`;
  const parts = [];
  if (entry.action) parts.push(entry.action);
  if (entry.effect) parts.push(entry.effect);
  if (entry.resources && entry.resources.length) parts.push(entry.resources.join(", "));
  if (entry.rule && entry.rule.resource !== undefined) parts.push(`by ${entry.rule.action} "${entry.rule.resource}" (${entry.rule.origin})`);
  if (entry.reply) parts.push(`reply ${entry.reply}`);
  return parts.join(" · ");
}

async function refreshAudit() {
  await guarded(async () => {
    const form = new FormData($("audit-form"));
    const query = new URLSearchParams();
    for (const [key, value] of form) if (String(value).trim()) query.set(key, String(value).trim());
    const entries = await api(`/audit?${query}`);
    const list = $("audit-list");
    list.replaceChildren();
    if (!entries.length) list.append(h("tr", {}, h("td", { colspan: "5", class: "muted" }, "No entry matches.")));
    for (const entry of entries.slice().reverse()) {
      list.append(h("tr", { class: entry.effect ? `effect-${entry.effect}` : null },
        h("td", {}, time(entry.time)),
        h("td", { class: "mono" }, entry.session || ""),
        h("td", {}, entry.kind || ""),
        h("td", { class: "mono" }, entry.tool || ""),
        h("td", { class: "mono" }, auditWhat(entry))));
    }
  });
}

$("audit-form").addEventListener("submit", (event) => {
  event.preventDefault();
  refreshAudit();
});

// ---------------------------------------------------------------- background processes

async function refreshShells() {
  try {
    // Refreshes overlap (each process's output is fetched): only the newest one shows.
    const seq = (state.shellSeq = (state.shellSeq || 0) + 1);
    const shells = await api("/shell");
    const items = Array.isArray(shells) ? shells : [];
    const cards = [];
    for (const shell of items) cards.push(await shellCard(shell));
    if (seq !== state.shellSeq) return;
    $("shells").hidden = false;
    if (!cards.length) cards.push(h("p", { class: "muted" }, "No background process."));
    $("shells-list").replaceChildren(...cards);
  } catch (error) {
    if (error.status === 404) {
      // This server has no background processes to list.
      state.shells = false;
      $("shells").hidden = true;
    } else if (error.status === 401) {
      showLogin("Your session ended; log in again.");
    } else {
      showError(error);
    }
  }
}

async function shellCard(shell) {
  const id = shell.id;
  let output = "";
  try {
    // What a person reads never moves the model's own read position.
    const got = await api(`/shell/${encodeURIComponent(id)}/output`);
    output = got.text || "";
    if (got.dropped) output = `(${got.dropped} older bytes are only in ${shell.output})\n${output}`;
  } catch (error) {
    output = `(output unavailable: ${error.message})`;
  }
  const running = shell.state === "running";
  const kill = async () => {
    try {
      await api(`/shell/${encodeURIComponent(id)}/kill`, { method: "POST" });
      showError(null);
      announce(`Killed background process ${id}`);
    } catch (error) {
      showError(error);
    }
    refreshShells();
  };
  const status = running ? `running, pid ${shell.pid}` : `exited${shell.exit === undefined ? "" : ` with code ${shell.exit}`}`;
  return h("article", { class: "card", "aria-label": `Background process ${id}`, "data-shell": id },
    h("h3", {}, `${id}: `, h("span", { class: "mono" }, shell.command || "")),
    h("p", { class: "muted" }, `session ${shell.sessionID} · ${status} · started ${time(shell.started)} · ${shell.bytes} bytes`),
    h("pre", { class: "output", tabindex: "0", "aria-label": `Output of ${id}` }, output),
    running ? h("div", { class: "actions" }, h("button", { type: "button", class: "danger", onclick: kill, "aria-label": `Kill ${id}` }, "Kill")) : null);
}

start();
