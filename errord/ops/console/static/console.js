// errord console: the live turn list and the tools' refresh. No inline script anywhere:
// the Content-Security-Policy allows this file only. Pages are rendered (and escaped) by
// the daemon; this script only moves the rows it sends into the page.
"use strict";

(function () {
  const TURNS_EVERY_MS = 2000;
  const TOOLS_EVERY_MS = 10000;

  function parseRows(html) {
    const page = new DOMParser().parseFromString(
      "<table><tbody>" + html + "</tbody></table>", "text/html");
    return Array.from(page.querySelectorAll("tbody > tr"));
  }

  function say(text) {
    const state = document.getElementById("live-state");
    if (state) {
      state.textContent = text;
    }
  }

  function liveTurns(rows) {
    let top = rows.dataset.top;
    let stopped = false;
    async function poll() {
      if (stopped || document.hidden) {
        return;
      }
      const separator = rows.dataset.live.includes("?") ? "&" : "?";
      let response;
      try {
        response = await fetch(rows.dataset.live + separator + "after=" + encodeURIComponent(top),
          {credentials: "same-origin", cache: "no-store"});
      } catch (error) {
        say("Live: the daemon does not answer; trying again.");
        return;
      }
      if (response.status === 401) {
        stopped = true;
        say("Live: signed out; reload the page to sign in again.");
        return;
      }
      if (!response.ok) {
        say("Live: the daemon answered " + response.status + "; trying again.");
        return;
      }
      top = response.headers.get("X-Console-Top") || top;
      const fresh = parseRows(await response.text());
      for (const row of fresh.reverse()) {
        for (const old of rows.querySelectorAll("tr.turn-row")) {
          if (old.dataset.turn === row.dataset.turn) {
            old.remove();
          }
        }
        row.classList.add("fresh");
        rows.prepend(document.adoptNode(row));
      }
      say("Live: new activity appears at the top.");
    }
    setInterval(poll, TURNS_EVERY_MS);
  }

  function refreshTools(box) {
    async function refresh() {
      if (document.hidden) {
        return;
      }
      try {
        const response = await fetch(window.location.href,
          {credentials: "same-origin", cache: "no-store"});
        if (!response.ok) {
          return;
        }
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = page.getElementById(box.id);
        if (fresh) {
          box.replaceChildren(...Array.from(fresh.childNodes).map((node) => document.adoptNode(node)));
        }
      } catch (error) {
        // The next refresh tries again.
      }
    }
    setInterval(refresh, TOOLS_EVERY_MS);
  }

  const rows = document.getElementById("turn-rows");
  if (rows && rows.dataset.live) {
    liveTurns(rows);
  }
  const tools = document.querySelector("[data-refresh]");
  if (tools && tools.id) {
    refreshTools(tools);
  }
})();
