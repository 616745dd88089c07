package report

// explorerJS draws every element of class "xp" of report.html from the JSON array in the
// element with id "lb-explorers" (one explorerData per explorer, the element's data-i its
// index): an SVG built as markup, redrawn on every zoom, pan, hover, pin and resize. Plain
// ECMAScript 5, no template literals; it reads nothing but the page and requests nothing.
// When an explorer has drawn, its element gets data-ready="1"; a pinned request's index is in
// data-pinned.
const explorerJS = `(function () {
"use strict";
var node = document.getElementById("lb-explorers");
if (!node) { return; }
var all = JSON.parse(node.textContent || "[]");
var FILL = {a: "#1a9850", d: "#b4b4b4", u: "#f0a30a", f: "#d62728"};
var WORD = {a: "admitted", d: "denied", u: "unknown outcome (it may have been admitted)", f: "failed (admitted nothing)"};
var LANE = 16, ANN = 16, CHART = 120, AXIS = 30, LEFT = 130, RIGHT = 16, TOP = 6;

function esc(s) {
  return String(s).split("&").join("&amp;").split("<").join("&lt;").split(">").join("&gt;").split("\"").join("&quot;");
}
function digitsFor(stepUS) { return Math.max(0, Math.min(6, Math.ceil(-Math.log(stepUS / 1e6) / Math.LN10))); }
function secs(us, digits) { return (us / 1e6).toFixed(digits === undefined ? 6 : digits) + " s"; }
function niceStep(range, n) {
  var raw = Math.max(range / n, 1), p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
function attrs(o) {
  var s = "", k;
  for (k in o) { if (o.hasOwnProperty(k) && o[k] !== undefined) { s += " " + k + "=\"" + esc(o[k]) + "\""; } }
  return s;
}
function el(name, o, body) { return "<" + name + attrs(o) + (body === undefined ? "/>" : ">" + body + "</" + name + ">"); }

function Explorer(root, d) {
  this.root = root;
  this.d = d;
  this.svg = root.querySelector("svg");
  this.tip = root.querySelector(".xp-tip");
  this.pin = root.querySelector(".xp-pin");
  this.pinned = -1;
  this.faults = d.faults || [];
  this.events = d.events || [];
  this.marks = d.marks || [];
  var g = d.granularity_us || 0, steps = [], i, q, n = 0;
  for (i = 0; i < d.requests.length; i++) {
    q = d.requests[i];
    if (q.k === "a" && q.s && q.lo - g >= d.from_us && q.hi + g <= d.to_us) { steps.push([q.hi + g, q.p]); }
  }
  steps.sort(function (a, b) { return a[0] - b[0]; });
  this.count = [];
  for (i = 0; i < steps.length; i++) { n += steps[i][1]; this.count.push([steps[i][0], n]); }
  this.countMax = n;
  this.bind();
  this.fitWindow();
}

// allowance is the most a limiter that keeps its contract can admit between the window's start
// and t: C + r·(t − start) for a token bucket; L per window the span can meet otherwise (a
// sliding window: ⌊span/W⌋ + 1 of them; aligned or first-hit windows: ⌈span/W⌉ + 1).
Explorer.prototype.allowance = function (t) {
  var d = this.d, span = Math.max(0, t - d.from_us);
  if (d.kind === "token-bucket") { return d.capacity + d.refill_permits / d.refill_per_us * span; }
  if (d.kind === "sliding-window") { return d.limit * (Math.floor(span / d.window_us) + 1); }
  return d.limit * (Math.ceil(span / d.window_us) + 1);
};

Explorer.prototype.layout = function () {
  var L = {w: Math.max(560, this.root.clientWidth || 1000), x0: LEFT, y: TOP};
  L.x1 = L.w - RIGHT;
  L.faults = this.faults.length ? L.y : -1;
  if (this.faults.length) { L.y += ANN; }
  L.events = this.events.length ? L.y : -1;
  if (this.events.length) { L.y += ANN; }
  L.lanes = L.y;
  L.chart = L.lanes + this.d.lanes.length * LANE + 10;
  L.axis = L.chart + CHART;
  L.h = L.axis + AXIS;
  return L;
};

Explorer.prototype.x = function (t) { return this.L.x0 + (t - this.v0) / (this.v1 - this.v0) * (this.L.x1 - this.L.x0); };
Explorer.prototype.t = function (x) { return this.v0 + (x - this.L.x0) / (this.L.x1 - this.L.x0) * (this.v1 - this.v0); };
Explorer.prototype.cx = function (t) { return Math.max(this.L.x0 - 4, Math.min(this.L.x1 + 4, this.x(t))); };

Explorer.prototype.fitWindow = function () {
  var d = this.d, pad = Math.max((d.to_us - d.from_us) * 0.15, 500);
  this.v0 = d.from_us - pad;
  this.v1 = d.to_us + pad;
  this.draw();
};
Explorer.prototype.fitAll = function () {
  this.v0 = this.d.span_from_us;
  this.v1 = Math.max(this.d.span_to_us, this.v0 + 1000);
  this.draw();
};
Explorer.prototype.zoom = function (f, at) {
  var w = Math.max((this.v1 - this.v0) * f, 20), frac;
  if (at === undefined) { at = (this.v0 + this.v1) / 2; }
  frac = (at - this.v0) / (this.v1 - this.v0);
  this.v0 = at - frac * w;
  this.v1 = this.v0 + w;
  this.draw();
};

Explorer.prototype.drawLanes = function (out) {
  var L = this.L, d = this.d, i, y;
  for (i = 0; i < d.lanes.length; i++) {
    y = L.lanes + i * LANE;
    if (i % 2 === 0) { out.push(el("rect", {x: L.x0, y: y, width: L.x1 - L.x0, height: LANE, fill: "#f5f5f5"})); }
    out.push(el("text", {x: L.x0 - 6, y: y + 12, "text-anchor": "end", "font-size": 11}, esc(d.lanes[i] + (d.skews[i] ? "  clock " + d.skews[i] : ""))));
  }
  if (L.faults >= 0) { out.push(el("text", {x: L.x0 - 6, y: L.faults + 12, "text-anchor": "end", "font-size": 11, "font-style": "italic"}, "faults")); }
  if (L.events >= 0) { out.push(el("text", {x: L.x0 - 6, y: L.events + 12, "text-anchor": "end", "font-size": 11, "font-style": "italic"}, "Redis")); }
};

Explorer.prototype.drawAnnotations = function (out) {
  var L = this.L, self = this, i, a, x0, x1;
  for (i = 0; i < this.faults.length; i++) {
    a = this.faults[i];
    x0 = self.cx(a.from_us);
    x1 = self.cx(a.to_us);
    out.push(el("rect", {x: x0, y: L.faults + 2, width: Math.max(x1 - x0, 2), height: ANN - 4, fill: "#f2c200", "fill-opacity": 0.7}, el("title", {}, esc(a.label + " (acting)"))));
    if (a.until_us > a.to_us) {
      out.push(el("rect", {x: x1, y: L.faults + 2, width: Math.max(self.cx(a.until_us) - x1, 1), height: ANN - 4, fill: "#f2c200", "fill-opacity": 0.3}, el("title", {}, esc(a.label + " (recovery)"))));
    }
  }
  for (i = 0; i < this.events.length; i++) {
    a = this.events[i];
    x0 = self.cx(a.from_us);
    x1 = self.cx(a.to_us);
    out.push(el("rect", {x: x0, y: L.events + 2, width: Math.max(x1 - x0, 2), height: ANN - 4, fill: "#555", "fill-opacity": 0.6}, el("title", {}, esc(a.label))));
  }
};

Explorer.prototype.drawRequests = function (out) {
  var L = this.L, d = this.d, i, q, x0, x1, exact, o;
  for (i = 0; i < d.requests.length; i++) {
    q = d.requests[i];
    if (q.hi < this.v0 || q.lo > this.v1) { continue; }
    x0 = this.cx(q.lo);
    x1 = this.cx(q.hi);
    exact = q.lo === q.hi;
    o = {"data-r": i, x: (exact ? x0 - 1.5 : x0).toFixed(1), y: L.lanes + q.l * LANE + 3,
      width: Math.max(x1 - x0, exact ? 3 : 2).toFixed(1), height: 10, fill: FILL[q.k]};
    if (i === this.pinned) { o.stroke = "#d62728"; o["stroke-width"] = 2; } else if (exact) { o.stroke = "#000"; o["stroke-width"] = 0.6; }
    out.push(el("rect", o));
  }
};

Explorer.prototype.drawChart = function (out) {
  var L = this.L, d = this.d, self = this, top = Math.max(this.countMax, this.allowance(d.to_us), d.permits, 1) * 1.15, pts, i, n;
  function y(v) { return (L.chart + CHART - v / top * CHART).toFixed(1); }
  out.push(el("rect", {x: L.x0, y: L.chart, width: L.x1 - L.x0, height: CHART, fill: "none", stroke: "#ccc"}));
  out.push(el("text", {x: L.x0 - 6, y: L.chart + CHART / 2, "text-anchor": "end", "font-size": 11}, "permits in the"));
  out.push(el("text", {x: L.x0 - 6, y: L.chart + CHART / 2 + 13, "text-anchor": "end", "font-size": 11}, "worst window"));
  out.push(el("text", {x: L.x0 - 6, y: L.chart + CHART, "text-anchor": "end", "font-size": 10}, "0"));
  out.push(el("text", {x: L.x0 - 6, y: +y(top / 1.15) + 4, "text-anchor": "end", "font-size": 10}, String(Math.round(top / 1.15))));
  out.push(el("polyline", {points: this.allowancePoints(y), fill: "none", stroke: "#000", "stroke-dasharray": "5 3", "stroke-width": 1.2},
    el("title", {}, "the most a limiter that keeps its contract admits from the window's start on")));
  pts = [this.cx(d.from_us).toFixed(1) + "," + y(0)];
  n = 0;
  for (i = 0; i < this.count.length; i++) {
    pts.push(self.cx(this.count[i][0]).toFixed(1) + "," + y(n));
    n = this.count[i][1];
    pts.push(self.cx(this.count[i][0]).toFixed(1) + "," + y(n));
  }
  pts.push(this.cx(d.to_us).toFixed(1) + "," + y(n));
  out.push(el("polyline", {points: pts.join(" "), fill: "none", stroke: "#b2182b", "stroke-width": 1.8}, el("title", {}, "admissions of the broken scope certainly inside the window, counted")));
  out.push(el("text", {x: L.x1 - 4, y: L.chart + 12, "text-anchor": "end", "font-size": 11},
    esc("certainly inside: " + n + " permits; " + (d.violation === "definite" ? "the checker's set: " : "could fall within one window: ") +
      d.permits + " where " + d.allowed + " allowed")));
};

// allowancePoints draws the allowance from the window's start to its end: a straight line for a
// token bucket, a staircase (one step per window) otherwise, at most 400 steps.
Explorer.prototype.allowancePoints = function (y) {
  var d = this.d, pts = [], t, step, prev;
  if (d.kind === "token-bucket") {
    return this.cx(d.from_us).toFixed(1) + "," + y(this.allowance(d.from_us)) + " " + this.cx(d.to_us).toFixed(1) + "," + y(this.allowance(d.to_us));
  }
  step = Math.max(d.window_us, (d.to_us - d.from_us) / 400);
  prev = this.allowance(d.from_us);
  pts.push(this.cx(d.from_us).toFixed(1) + "," + y(prev));
  for (t = d.from_us + (d.kind === "sliding-window" ? step : 1); t < d.to_us; t += step) {
    pts.push(this.cx(t).toFixed(1) + "," + y(prev));
    prev = this.allowance(t);
    pts.push(this.cx(t).toFixed(1) + "," + y(prev));
  }
  pts.push(this.cx(d.to_us).toFixed(1) + "," + y(prev));
  return pts.join(" ");
};

Explorer.prototype.drawAxis = function (out) {
  var L = this.L, d = this.d, step = niceStep(this.v1 - this.v0, 8), digits = digitsFor(step), t, x, i, m;
  out.push(el("line", {x1: L.x0, y1: L.axis, x2: L.x1, y2: L.axis, stroke: "#888"}));
  for (t = Math.ceil(this.v0 / step) * step; t <= this.v1; t += step) {
    x = this.x(t).toFixed(1);
    out.push(el("line", {x1: x, y1: L.lanes, x2: x, y2: L.axis + 4, stroke: "#000", "stroke-opacity": 0.08}));
    out.push(el("text", {x: x, y: L.axis + 16, "text-anchor": "middle", "font-size": 11}, secs(t, digits)));
  }
  out.push(el("text", {x: L.x0 - 6, y: L.axis + 16, "text-anchor": "end", "font-size": 10, "font-style": "italic"}, "time since start"));
  for (i = 0; i < this.marks.length; i++) {
    m = this.marks[i];
    if (m < this.v0 || m > this.v1) { continue; }
    x = this.x(m);
    out.push(el("path", {d: "M" + (x - 4).toFixed(1) + "," + (L.axis + 7) + "h8l-4,-7z", fill: "#d62728"}, el("title", {}, "definite violation at " + secs(m))));
  }
  if (d.first_us !== undefined && d.first_us >= this.v0 && d.first_us <= this.v1) {
    x = this.x(d.first_us).toFixed(1);
    out.push(el("line", {x1: x, y1: L.lanes, x2: x, y2: L.axis, stroke: "#d62728", "stroke-dasharray": "2 2"}, el("title", {}, "the first definite violation ends here")));
  }
};

Explorer.prototype.draw = function () {
  var L = this.L = this.layout(), d = this.d, out = [], bx0, bx1;
  this.svg.setAttribute("viewBox", "0 0 " + L.w + " " + L.h);
  this.svg.setAttribute("height", L.h);
  this.drawLanes(out);
  bx0 = this.cx(d.from_us);
  bx1 = this.cx(d.to_us);
  out.push(el("rect", {"class": "band", x: bx0.toFixed(1), y: L.lanes - 2, width: Math.max(bx1 - bx0, 1).toFixed(1), height: L.axis - L.lanes + 2,
    fill: "#d62728", "fill-opacity": 0.08, stroke: "#d62728", "stroke-dasharray": "4 3"}, el("title", {}, "the worst window")));
  this.drawAnnotations(out);
  this.drawRequests(out);
  this.drawChart(out);
  this.drawAxis(out);
  this.svg.innerHTML = out.join("");
  this.root.setAttribute("data-ready", "1");
};

Explorer.prototype.describe = function (i) {
  var d = this.d, q = d.requests[i], lines = [], g = d.granularity_us || 0;
  lines.push(d.lanes[q.l] + (d.skews[q.l] ? " (clock " + d.skews[q.l] + ")" : "") + ": " + WORD[q.k] + ", " + q.p + (q.p === 1 ? " permit" : " permits"));
  if (q.lo === q.hi) {
    lines.push("decided at " + secs(q.lo) + " (the server's own time)");
  } else if (q.k === "u") {
    lines.push("sent at " + secs(q.lo) + ", no answer by " + secs(q.hi) + " (it may have run later)");
  } else {
    lines.push("decided between " + secs(q.lo) + " and " + secs(q.hi) + " (" + ((q.hi - q.lo) / 1000).toFixed(3) + " ms: sent to received)");
  }
  if (q.s) {
    lines.push("counts against " + (d.subject ? "subject " + d.subject : "consumer " + d.client) + (d.client && d.subject ? " client " + d.client : ""));
    if (q.k === "a") {
      lines.push(q.lo - g >= d.from_us && q.hi + g <= d.to_us ? "certainly inside the worst window" : (q.hi + g < d.from_us || q.lo - g > d.to_us ? "outside the worst window" : "possibly inside the worst window"));
    }
  } else {
    lines.push("another client's scope: not counted in this window");
  }
  return lines.join("\n");
};

Explorer.prototype.showTip = function (i, ev) {
  var r = this.root.getBoundingClientRect();
  this.tip.textContent = this.describe(i);
  this.tip.hidden = false;
  var left = ev.clientX - r.left + 14, w = this.tip.offsetWidth;
  if (left + w > r.width) { left = Math.max(0, ev.clientX - r.left - w - 14); }
  this.tip.style.left = left + "px";
  this.tip.style.top = (ev.clientY - r.top + 14) + "px";
};

Explorer.prototype.setPin = function (i) {
  this.pinned = i;
  if (i < 0) {
    this.pin.textContent = "Click a request to pin its details here.";
    this.pin.className = "xp-pin";
    this.root.removeAttribute("data-pinned");
  } else {
    this.pin.textContent = "Pinned: " + this.describe(i) + "\n(click it again, or an empty place, to unpin)";
    this.pin.className = "xp-pin on";
    this.root.setAttribute("data-pinned", String(i));
  }
  this.draw();
};

Explorer.prototype.bind = function () {
  var self = this, svg = this.svg, drag = null, moved = false, queued = false;
  function index(ev) { var a = ev.target && ev.target.getAttribute ? ev.target.getAttribute("data-r") : null; return a === null ? -1 : +a; }
  function redraw() { if (!queued) { queued = true; window.requestAnimationFrame(function () { queued = false; self.draw(); }); } }
  function svgX(ev) { var r = svg.getBoundingClientRect(); return (ev.clientX - r.left) * self.L.w / r.width; }
  svg.addEventListener("mousemove", function (ev) {
    if (drag) {
      var dx = svgX(ev) - drag.x, dt = dx / (self.L.x1 - self.L.x0) * (drag.v1 - drag.v0);
      if (Math.abs(dx) > 2) { moved = true; }
      self.v0 = drag.v0 - dt;
      self.v1 = drag.v1 - dt;
      redraw();
      return;
    }
    var i = index(ev);
    if (i >= 0) { self.showTip(i, ev); } else { self.tip.hidden = true; }
  });
  svg.addEventListener("mouseleave", function () { self.tip.hidden = true; drag = null; });
  svg.addEventListener("mousedown", function (ev) { drag = {x: svgX(ev), v0: self.v0, v1: self.v1}; moved = false; });
  svg.addEventListener("mouseup", function (ev) {
    var i = index(ev);
    drag = null;
    if (moved) { return; }
    self.setPin(i >= 0 && i !== self.pinned ? i : -1);
  });
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    self.zoom(ev.deltaY > 0 ? 1.25 : 0.8, self.t(svgX(ev)));
  }, {passive: false});
  var buttons = this.root.querySelectorAll("button[data-z]"), i;
  for (i = 0; i < buttons.length; i++) {
    buttons[i].addEventListener("click", function () {
      var z = this.getAttribute("data-z");
      if (z === "in") { self.zoom(0.5); } else if (z === "out") { self.zoom(2); } else if (z === "all") { self.fitAll(); } else { self.fitWindow(); }
    });
  }
  window.addEventListener("resize", redraw);
  var details = this.root.closest ? this.root.closest("details") : null;
  if (details) { details.addEventListener("toggle", redraw); }
};

var roots = document.querySelectorAll(".xp"), k;
for (k = 0; k < roots.length; k++) {
  var d = all[+roots[k].getAttribute("data-i")];
  if (d) { new Explorer(roots[k], d); }
}
})();`
