// The background-task panel's script (served from /ui/assets/panel.js; no inline script).
// Live by push: an EventSource on <base>/events; on "change" the panel's <main> is fetched
// again and swapped in, keeping open details open. When the stream drops, it polls the JSON
// listing with If-None-Match (a 304 costs nothing): every 3 s while a task is active, every
// 15 s otherwise, and not at all while the tab is hidden; the stream is tried again now and
// then. The forms work without this script.
"use strict";
(function () {
  var base = document.body.dataset.base;
  if (!base) { return; }
  var ACTIVE_MS = 3000, IDLE_MS = 15000, RETRY_STREAM_MS = 60000, DEBOUNCE_MS = 200;
  var etag = null, timer = null, stream = null, pending = null, retryAt = 0;

  function say(text) {
    var live = document.getElementById("live");
    if (live) { live.textContent = text; }
  }

  function activeCount() {
    var badge = document.getElementById("active-count");
    return badge ? Number(badge.dataset.count || 0) : 0;
  }

  function busyTyping() {
    var el = document.activeElement;
    if (el && el.closest && el.closest("#panel form")) { return true; }
    var areas = document.querySelectorAll("#panel textarea");
    for (var i = 0; i < areas.length; i++) { if (areas[i].value) { return true; } }
    return false;
  }

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.getElementById("panel"), old = document.getElementById("panel");
    if (!fresh || !old) { return; }
    var open = {};
    old.querySelectorAll("details.task[open]").forEach(function (d) { open[d.dataset.task] = true; });
    fresh.querySelectorAll("details.task").forEach(function (d) {
      if (open[d.dataset.task]) { d.open = true; }
    });
    old.replaceWith(document.adoptNode(fresh));
  }

  function render() {
    if (busyTyping()) { pending = setTimeout(render, 1000); return; }
    fetch(location.pathname, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(swap)
      .catch(function () { say("Could not refresh; retrying."); });
  }

  function changed() {
    if (pending) { clearTimeout(pending); }
    pending = setTimeout(render, DEBOUNCE_MS);
  }

  function poll() {
    timer = null;
    if (document.hidden) { return; }
    var headers = etag ? { "If-None-Match": etag } : {};
    fetch(base + "/tasks", { credentials: "same-origin", cache: "no-store", headers: headers })
      .then(function (r) {
        if (r.status === 401) { say("The session ended: reload the page to sign in again."); return; }
        if (r.status === 200) {
          var first = etag === null;
          etag = r.headers.get("ETag");
          if (!first) { changed(); }
        }
      })
      .catch(function () {})
      .then(schedule);
  }

  function schedule() {
    if (stream || timer || document.hidden) { return; }
    if (Date.now() > retryAt) { listen(); return; }
    timer = setTimeout(poll, activeCount() > 0 ? ACTIVE_MS : IDLE_MS);
  }

  function listen() {
    if (!window.EventSource) { retryAt = Infinity; schedule(); return; }
    stream = new EventSource(base + "/events");
    stream.addEventListener("ready", function () { say("Live."); changed(); });
    stream.addEventListener("change", changed);
    stream.onerror = function () {
      stream.close();
      stream = null;
      retryAt = Date.now() + RETRY_STREAM_MS;
      say("Live updates paused; refreshing every few seconds.");
      schedule();
    };
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && !stream) {
      if (timer) { clearTimeout(timer); timer = null; }
      poll();
    }
  });
  listen();
})();
