// The review a task list stops for, as a form: approve (the plan, or the tasks as
// edited here), reject with a reason, respond with feedback for a new plan; after the
// self-check, accept or revise. Each answer becomes a decision for /api/chat/resume.

import { clear, h } from "./dom.js";

const MAX_TASKS = 7;
const DEFAULT_ACTIONS = {
  strategy_review: ["approve", "edit", "reject", "respond"],
  revision_review: ["accept", "revise"],
};
const TITLES = {
  strategy_review: "Review the task list",
  revision_review: "Review the self-check",
};

/** What the person answered, in words (a line of the page; memory keeps the outcome). */
export function decisionWords(decision) {
  switch (decision.action) {
    case "approve":
      return "You approved the task list.";
    case "edit":
      return `You approved an edited task list (${decision.tasks.length} tasks).`;
    case "reject":
      return `You rejected the plan: ${decision.reason}`;
    case "respond":
      return `You asked for a new plan: ${decision.feedback}`;
    case "accept":
      return "You accepted the result.";
    case "revise":
      return "You asked for a revision.";
    default:
      return `You answered: ${decision.action}`;
  }
}

/** The actions a review allows: its `actions` (names or `{action}`), else its kind's. */
export function reviewActions(payload) {
  const names = (Array.isArray(payload.actions) ? payload.actions : [])
    .map((item) => (item && typeof item === "object" ? item.action || item.name : item))
    .filter((name) => typeof name === "string" && name);
  return names.length ? names : DEFAULT_ACTIONS[payload.kind] || [];
}

/**
 * Render `payload` into `root`.
 * @param {HTMLElement} root
 * @param {object} payload the interrupt payload
 * @param {(decision: object) => void} onDecision
 * @returns {{setError: (message: string) => void, setBusy: (busy: boolean) => void}}
 */
export function renderReview(root, payload, onDecision) {
  clear(root);
  const actions = reviewActions(payload);
  const error = h("p", { class: "form-error small", attrs: { role: "alert" }, hidden: true });
  const setError = (message) => {
    error.textContent = message || "";
    error.hidden = !message;
  };
  const buttons = [];
  const button = (label, className, handler, role) => {
    const node = h("button", {
      type: "button",
      class: className,
      text: label,
      attrs: { "data-action": role },
      on: { click: handler },
    });
    buttons.push(node);
    return node;
  };

  // what is reviewed scrolls; the answers stay below it, all in view however long the
  // task list is
  const body = h("div", { class: "review-body" });
  const foot = h("div", { class: "review-foot" });
  root.append(h("h2", { text: TITLES[payload.kind] || "Review" }), body, foot);
  if (typeof payload.goal === "string" && payload.goal.trim()) {
    body.append(h("p", { class: "goal" }, h("strong", { text: "Goal: " }), payload.goal));
  }
  for (const key of ["message", "question", "summary"]) {
    if (typeof payload[key] === "string" && payload[key].trim()) {
      body.append(h("p", { text: payload[key] }));
    }
  }
  if (typeof payload.error === "string" && payload.error) {
    body.append(
      h("p", { class: "form-error small", text: `The last answer was refused: ${payload.error}` }),
    );
  }

  const tasks = Array.isArray(payload.tasks) ? payload.tasks : null;
  const editor = tasks ? taskEditor(tasks, actions.includes("edit")) : null;
  if (editor) body.append(editor.node);
  if (Array.isArray(payload.issues)) body.append(issueList(payload.issues));

  const row = h("div", { class: "review-actions" });
  if (actions.includes("approve")) {
    const approve = button(
      "Approve",
      "primary",
      () => {
        if (!editor || !editor.changed()) return onDecision({ action: "approve" });
        const edited = editor.tasks();
        if (!edited.length) return setError("Keep at least one task, or reject the plan.");
        onDecision({ action: "edit", tasks: edited });
      },
      "approve",
    );
    editor?.onChange((changed) => {
      approve.textContent = changed ? "Approve edited tasks" : "Approve";
    });
    row.append(approve);
  }
  for (const name of ["accept", "revise"]) {
    if (actions.includes(name)) {
      const label = name === "accept" ? "Accept as is" : "Revise the flagged tasks";
      row.append(
        button(label, name === "accept" ? "primary" : "", () => onDecision({ action: name }), name),
      );
    }
  }
  if (actions.includes("reject")) {
    foot.append(
      textAnswer("reject", "Reason for rejecting the plan", "Reject", "danger", "reason"),
    );
  }
  if (actions.includes("respond")) {
    foot.append(
      textAnswer("respond", "Feedback for a new plan", "Re-plan with feedback", "", "feedback"),
    );
  }
  const known = new Set(["approve", "edit", "reject", "respond", "accept", "revise"]);
  for (const name of actions.filter((action) => !known.has(action))) {
    row.append(button(name, "", () => onDecision({ action: name }), name));
  }
  foot.append(error, row);
  root.hidden = false;

  function textAnswer(action, label, buttonLabel, className, field) {
    const id = `review-${action}`;
    const input = h("textarea", {
      id,
      rows: 1,
      placeholder: label,
      maxLength: action === "reject" ? 1000 : 2000,
    });
    const send = button(
      buttonLabel,
      className,
      () => {
        const value = input.value.trim();
        if (!value) {
          setError(`${label}: write a few words first.`);
          input.focus();
          return;
        }
        onDecision({ action, [field]: value });
      },
      action,
    );
    return h(
      "div",
      { class: "review-text" },
      h("label", { class: "visually-hidden", text: label, attrs: { for: id } }),
      input,
      send,
    );
  }

  return {
    setError,
    setBusy(busy) {
      for (const node of root.querySelectorAll("button, input, textarea")) node.disabled = busy;
    },
  };
}

function issueList(issues) {
  if (!issues.length) return h("p", { class: "muted", text: "The self-check found no issues." });
  return h(
    "ul",
    { class: "review-issues" },
    issues.map((issue) => {
      const text = typeof issue === "string" ? issue : issue.description || issue.text || "";
      const where = issue && issue.task_title ? ` (task: ${issue.task_title})` : "";
      const blocking = issue && issue.blocking ? " — blocking" : "";
      return h("li", { text: `${text}${where}${blocking}` });
    }),
  );
}

/** Tasks as editable rows (title, and acceptance criteria one per line), or a list. */
function taskEditor(tasks, editable) {
  if (!editable) {
    return {
      node: h(
        "ol",
        { class: "review-tasks" },
        tasks.map((task) => h("li", { text: titleOf(task) })),
      ),
      changed: () => false,
      tasks: () => [],
      onChange: () => {},
    };
  }
  const original = JSON.stringify(tasks.map(asDecisionTask));
  const list = h("ol", { class: "review-tasks" });
  const listeners = [];
  const notify = () => {
    const changed = JSON.stringify(readTasks()) !== original;
    for (const listener of listeners) listener(changed);
    add.disabled = list.children.length >= MAX_TASKS;
  };
  const addRow = (task) => {
    const title = h("input", {
      type: "text",
      value: titleOf(task),
      maxLength: 200,
      attrs: { "aria-label": "Task title", "data-field": "title" },
    });
    const criteria = h("textarea", {
      rows: 1,
      value: criteriaOf(task).join("\n"),
      placeholder: "Acceptance criteria, one per line",
      attrs: { "aria-label": "Acceptance criteria, one per line", "data-field": "criteria" },
    });
    const row = h(
      "li",
      { class: "task-row", attrs: { "data-task-id": task.id || "" } },
      h("div", { class: "task-fields" }, title, criteria),
      h("button", {
        type: "button",
        class: "ghost small-button",
        text: "Remove",
        attrs: { "aria-label": "Remove this task" },
        on: {
          click: () => {
            row.remove();
            notify();
          },
        },
      }),
    );
    // a generated criterion describes the generated title: once the title is rewritten,
    // an untouched criterion goes (the task list then uses its default one)
    const generated = criteria.value;
    let criteriaTouched = false;
    criteria.addEventListener("input", () => {
      criteriaTouched = true;
    });
    title.addEventListener("input", () => {
      if (!criteriaTouched && generated && criteria.value === generated) criteria.value = "";
    });
    for (const field of [title, criteria]) field.addEventListener("input", notify);
    list.append(row);
  };
  const readTasks = () =>
    [...list.children]
      .map((row) => {
        const title = row.querySelector("[data-field=title]").value.trim();
        const criteria = row
          .querySelector("[data-field=criteria]")
          .value.split("\n")
          .map((line) => line.trim())
          .filter(Boolean);
        const task = { title };
        if (row.dataset.taskId) task.id = row.dataset.taskId;
        if (criteria.length) task.acceptance_criteria = criteria;
        return task;
      })
      .filter((task) => task.title);
  const add = h("button", {
    type: "button",
    class: "ghost",
    text: "Add a task",
    on: {
      click: () => {
        addRow({ title: "" });
        notify();
        list.lastElementChild.querySelector("input").focus();
      },
    },
  });
  for (const task of tasks) addRow(task);
  return {
    node: h("div", { class: "task-editor" }, list, add),
    changed: () => JSON.stringify(readTasks()) !== original,
    tasks: readTasks,
    onChange: (listener) => listeners.push(listener),
  };
}

function titleOf(task) {
  if (typeof task === "string") return task;
  return String((task && (task.title || task.name || task.description)) || "");
}

function criteriaOf(task) {
  const criteria = task && (task.acceptance_criteria || task.acceptanceCriteria);
  if (Array.isArray(criteria)) return criteria.map(String);
  return criteria ? [String(criteria)] : [];
}

function asDecisionTask(task) {
  const out = { title: titleOf(task).trim() };
  if (task && task.id) out.id = task.id;
  const criteria = criteriaOf(task);
  if (criteria.length) out.acceptance_criteria = criteria;
  return out;
}
