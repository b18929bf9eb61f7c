// The BBS in the browser (qtc's /terminal): what the BBS sends over the WebSocket is shown as
// it comes (its lines end in CR); what is typed goes as one line per frame. No other script
// runs on qtc's pages.
(() => {
  "use strict";
  const screen = document.getElementById("screen");
  const form = document.getElementById("line");
  const input = document.getElementById("input");
  const state = document.getElementById("state");
  // The most text kept on the page; older text scrolls away.
  const KEEP = 200000;
  let text = "";
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const ws = new WebSocket(scheme + location.host + "/terminal/ws");
  const show = (s) => {
    text += s.replace(/\r\n?/g, "\n");
    if (text.length > KEEP) {
      text = text.slice(text.length - KEEP);
    }
    screen.textContent = text;
    // A password asked again (PW) is not shown as it is typed.
    input.type = /password:\s*$/i.test(text) ? "password" : "text";
    window.scrollTo(0, document.body.scrollHeight);
  };
  ws.onopen = () => {
    state.textContent = "connected";
    input.focus();
  };
  ws.onmessage = (e) => {
    if (typeof e.data === "string") {
      show(e.data);
    }
  };
  ws.onclose = () => {
    state.textContent = "disconnected: reload the page to connect again";
    input.disabled = true;
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (ws.readyState !== WebSocket.OPEN) {
      return;
    }
    ws.send(input.value);
    show((input.type === "password" ? "" : input.value) + "\n");
    input.value = "";
  });
})();
