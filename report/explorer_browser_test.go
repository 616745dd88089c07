package report

import (
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/limitbench/limitbench/result"
)

// demoPage writes the reports of the demo's result (testdata/demo-result.json, a real run of
// scenarios/demo.yaml) into a directory and returns report.html's path and the result as
// result.json holds it.
func demoPage(t *testing.T) (string, *result.Result) {
	t.Helper()
	dir := t.TempDir()
	if err := WriteAll(dir, readFixture(t, "demo-result.json")); err != nil {
		t.Fatal(err)
	}
	r, err := result.Read(filepath.Join(dir, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, HTMLFile), r
}

// TestExplorerInChromium (issue 31): in headless Chromium, report.html of the demo draws the
// violation explorer of its first failing entry: a lane per client, a bar per request; hovering
// over a request shows its details (its client, what happened to it, its times); a click pins
// them and a second click unpins; the zoom buttons, the wheel and a drag move the time axis; and
// the decision summary recommends what Recommend computes from result.json. The page makes no
// network request and logs no console error. With LIMITBENCH_SCREENSHOT set, a screenshot of
// the page (every <details> open) is kept there.
func TestExplorerInChromium(t *testing.T) {
	page, r := demoPage(t)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, html)
	p := openPage(t, page, screenshotW, 1000)
	p.do(t, chromedp.Poll[chromedp.Void](`document.querySelector(".xp[data-ready='1']") !== null`))

	// The decision summary's pick is the rule's, computed here from result.json.
	recs := eval[[]string](t, p, `Array.prototype.map.call(document.querySelectorAll("p.rec"), function (e) { return e.textContent; })`)
	topos := topologies(r)
	if len(recs) != len(topos) {
		t.Fatalf("the page has %d recommendations %q; want one per topology %v", len(recs), recs, topos)
	}
	for i, topo := range topos {
		want := "No algorithm qualifies on " + topo
		if alg := Recommend(r, topo); alg != "" {
			want = fmt.Sprintf("Recommended on %s: %s.", topo, alg)
		}
		if !strings.HasPrefix(recs[i], want) {
			t.Errorf("the page says %q on %s; Recommend on result.json says %q", recs[i], topo, want)
		}
	}

	// The first explorer is a definite violation's, drawn: one lane label per client, a bar per request in view.
	x := firstExcerpt(t, r)
	got := eval[[]int](t, p, `(function () { var x = document.querySelector(".xp"), s = x.querySelector("svg");
  return [s.querySelectorAll("rect[data-r]").length, JSON.parse(document.getElementById("lb-explorers").textContent)[0].lanes.length]; })()`)
	if got[0] == 0 || got[1] != len(x.Lanes) {
		t.Fatalf("the first explorer draws %d requests and has %d lanes; want requests and the %d lanes of %s", got[0], got[1], len(x.Lanes), x.Contract)
	}

	// Hover over an admission of the broken scope: its details show.
	i, cx, cy := visibleRequest(t, p)
	q := x.Requests[i]
	p.do(t, chromedp.MouseEvent(chromedp.MouseMoved, cx, cy))
	tip := eval[string](t, p, `(function () { var t = document.querySelector(".xp .xp-tip"); return t.hidden ? "" : t.textContent; })()`)
	for _, want := range []string{x.Lanes[q.Lane], "admitted", "counts against"} {
		if !strings.Contains(tip, want) {
			t.Errorf("hovering over request %d shows %q; want it to say %q", i, tip, want)
		}
	}
	// A click pins it; a second click unpins.
	p.do(t, chromedp.MouseClickXY(cx, cy))
	pinned := eval[[]string](t, p, `(function () { var x = document.querySelector(".xp"); return [x.getAttribute("data-pinned") || "", x.querySelector(".xp-pin").textContent]; })()`)
	if pinned[0] != fmt.Sprint(i) || !strings.Contains(pinned[1], "Pinned: "+x.Lanes[q.Lane]) {
		t.Errorf("after a click on request %d the explorer has pinned %q: %q", i, pinned[0], pinned[1])
	}
	p.do(t, chromedp.MouseClickXY(cx, cy))
	if now := eval[string](t, p, `document.querySelector(".xp").getAttribute("data-pinned") || ""`); now != "" {
		t.Errorf("a second click left request %s pinned", now)
	}

	// Zoom and pan move the time axis.
	axis := func() string {
		return eval[string](t, p, `Array.prototype.map.call(document.querySelectorAll(".xp svg text"), function (e) { return e.textContent; }).join("|")`)
	}
	before := axis()
	p.do(t, chromedp.Click(chromedp.CSS(`.xp button[data-z="in"]`)))
	zoomed := axis()
	if zoomed == before {
		t.Error("the zoom-in button left the time axis as it was")
	}
	p.do(t, chromedp.MouseEvent(chromedp.MouseWheel, cx, cy, func(e *input.DispatchMouseEventParams) { e.DeltaX, e.DeltaY = 1e-6, 240 }))
	p.do(t, chromedp.Poll[chromedp.Void](fmt.Sprintf(`Array.prototype.map.call(document.querySelectorAll(".xp svg text"), function (e) { return e.textContent; }).join("|") !== %q`, zoomed)))
	wheeled := axis()
	p.do(t, chromedp.MouseEvent(chromedp.MousePressed, cx, cy, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, cx+150, cy, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, cx+150, cy, chromedp.ButtonLeft))
	p.do(t, chromedp.Poll[chromedp.Void](fmt.Sprintf(`Array.prototype.map.call(document.querySelectorAll(".xp svg text"), function (e) { return e.textContent; }).join("|") !== %q`, wheeled)))
	if now := eval[string](t, p, `document.querySelector(".xp").getAttribute("data-pinned") || ""`); now != "" {
		t.Errorf("a drag pinned request %s; a drag pans and pins nothing", now)
	}

	if os.Getenv("LIMITBENCH_SCREENSHOT") != "" {
		p.do(t, chromedp.Click(chromedp.CSS(`.xp button[data-z="window"]`)))
		eval[int](t, p, openAllDetails)
		fullScreenshot(t, p)
	}
	p.close(t)
}

// firstExcerpt returns the excerpt the first explorer draws: the first entry of r with a
// definite violation.
func firstExcerpt(t *testing.T, r *result.Result) *explorerData {
	t.Helper()
	xs := explorerViews(r)
	if len(xs) == 0 || xs[0].Data.Violation != "definite" {
		t.Fatalf("the demo's result has no definite violation to explore")
	}
	return &xs[0].Data
}

// visibleRequest scrolls the first explorer into view and returns an admission of the broken
// scope it draws (its index in the excerpt) and the centre of its bar, in the window's pixels.
func visibleRequest(t *testing.T, p *browserPage) (int, float64, float64) {
	t.Helper()
	v := eval[[]float64](t, p, `(function () {
  var x = document.querySelector(".xp"), d = JSON.parse(document.getElementById("lb-explorers").textContent)[0];
  x.scrollIntoView({block: "center"});
  var rs = x.querySelectorAll("svg rect[data-r]");
  for (var i = 0; i < rs.length; i++) {
    var k = +rs[i].getAttribute("data-r"), q = d.requests[k], b = rs[i].getBoundingClientRect();
    if (q.k === "a" && q.s && b.width >= 2 && b.left > 150 && b.right < window.innerWidth - 200) {
      return [k, b.left + b.width / 2, b.top + b.height / 2];
    }
  }
  return [-1, 0, 0];
})()`)
	if v[0] < 0 {
		t.Fatal("the first explorer draws no admission of the broken scope to hover over")
	}
	return int(v[0]), v[1], v[2]
}

// TestTablesFitA1400PixelWindow (issue 31): in a 1,400-pixel window, report.html of the widest
// table a run makes (wideResult: every built-in algorithm, a custom script, every label, two
// topologies, long counts and contracts), every <details> open, and comparison.html of two
// such results, need no horizontal scrolling: each table fits its container and the page its
// window; and nothing is dropped from the verdict table.
func TestTablesFitA1400PixelWindow(t *testing.T) {
	dir := t.TempDir()
	r := wideResult(t)
	if err := WriteAll(dir, r); err != nil {
		t.Fatal(err)
	}
	other := wideResult(t)
	for i := range other.Entries {
		e := &other.Entries[i]
		e.ThroughputRPS, e.LatencyUS.P99, e.Accuracy.Efficiency = e.ThroughputRPS*1.7, e.LatencyUS.P99*0.4, 0.5
		if i%3 == 0 {
			e.Verification.Verdict = "fail"
		}
	}
	c, err := Compare([]*result.Result{r, other})
	if err != nil {
		t.Fatal(err)
	}
	c.Labels = []string{"results/baseline-with-a-long-name-2026-03-14T09:26:53Z/result.json", "results/candidate-with-a-long-name-2026-03-15T09:26:53Z/result.json"}
	if err := WriteComparison(dir, c); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{HTMLFile, ComparisonHTMLFile} {
		t.Run(page, func(t *testing.T) {
			p := openPage(t, filepath.Join(dir, page), 1400, 1000)
			eval[int](t, p, openAllDetails)
			m := eval[map[string][]int](t, p, `(function () {
  var out = {page: [window.innerWidth, document.documentElement.scrollWidth, document.documentElement.clientWidth]}, ts = document.querySelectorAll("table");
  for (var i = 0; i < ts.length; i++) { var w = ts[i].parentElement; out["table " + i + " " + ts[i].className] = [ts[i].scrollWidth, w.clientWidth, w.scrollWidth]; }
  return out;
})()`)
			if pg := m["page"]; pg[0] != 1400 || pg[1] > pg[2] {
				t.Errorf("window %d pixels, page %d pixels wide in %d: want 1400 and no sideways scrolling", pg[0], pg[1], pg[2])
			}
			tables := 0
			for name, v := range m {
				if name == "page" {
					continue
				}
				tables++
				if v[0] > v[1] || v[2] > v[1] {
					t.Errorf("%s is %d pixels wide (its container scrolls %d) in a container of %d: it scrolls sideways", name, v[0], v[2], v[1])
				}
			}
			if tables == 0 {
				t.Error("no table measured")
			}
			if page == HTMLFile {
				dom := eval[string](t, p, `document.querySelector("table.verdicts").textContent`)
				for _, e := range r.Entries {
					for _, s := range append([]string{e.Algorithm, r.LabelOf(&e)}, strings.Split(orDefault(e.Verification.Contract, "none"), " and ")...) {
						if !strings.Contains(dom, s) {
							t.Errorf("%s: the verdict table lacks %q", e.Name(), s)
						}
					}
				}
			}
			p.close(t)
		})
	}
}

// TestExplorersHTMLInChromium (issue 31): the explorer as another page embeds it
// (ExplorersHTML after PageHead, as a hunt's report.html does) draws in headless Chromium: the
// excerpt's requests in view, hovering over an admission shows its details, a click pins them;
// the page makes no network request and logs no console error.
func TestExplorersHTMLInChromium(t *testing.T) {
	x := firstExcerpt(t, readFixture(t, "demo-result.json"))
	section, err := ExplorersHTML([]ExplorerOf{{Excerpt: x.Excerpt, Heading: "my-limiter on single: definite violation, trial 3", Class: "fail"}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	head := template.Must(template.New("head").Parse(PageHead))
	if err := head.Execute(&b, struct{ Title string }{"embedded explorer"}); err != nil {
		t.Fatal(err)
	}
	b.WriteString(string(section) + "\n</body>\n</html>\n")
	page := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(page, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := openPage(t, page, screenshotW, 1000)
	p.do(t, chromedp.Poll[chromedp.Void](`document.querySelector(".xp[data-ready='1']") !== null`))
	i, cx, cy := visibleRequest(t, p)
	q := x.Requests[i]
	p.do(t, chromedp.MouseEvent(chromedp.MouseMoved, cx, cy))
	tip := eval[string](t, p, `(function () { var t = document.querySelector(".xp .xp-tip"); return t.hidden ? "" : t.textContent; })()`)
	if !strings.Contains(tip, x.Lanes[q.Lane]) || !strings.Contains(tip, "admitted") {
		t.Errorf("hovering over request %d shows %q; want its client %s and its outcome", i, tip, x.Lanes[q.Lane])
	}
	p.do(t, chromedp.MouseClickXY(cx, cy))
	if pinned := eval[string](t, p, `document.querySelector(".xp").getAttribute("data-pinned") || ""`); pinned != fmt.Sprint(i) {
		t.Errorf("after a click on request %d the explorer has pinned %q", i, pinned)
	}
	p.close(t)
}
