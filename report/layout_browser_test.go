package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/result"
)

// wideResult returns the fixture's result grown to the widest verdict table a run makes: every
// built-in algorithm, a custom script with a long name, and the reference script, on both the
// single and the cluster topology, with the longest contracts (two limits, per client, a clock
// granularity), every label and six- or seven-digit counts.
func wideResult(t *testing.T) *result.Result {
	t.Helper()
	r := readFixture(t, "result.json")
	base := r.Entries[0]
	base.Timeline = result.Timeline{} // no accuracy plots: the table is what is measured
	rows := []struct {
		alg, contract string
		verdict       verify.Verdict
		expected, may bool
	}{
		{"fixed-window", "fixed-window(100000, 1s)", verify.Pass, false, false},
		{"fixed-window-published", "fixed-window(100000, 1m0s, granularity 1s)", verify.Pass, true, false},
		{"sliding-log", "sliding-window(100000, 1s)", verify.Pass, false, false},
		{"sliding-log-published", "sliding-window(100000, 1s, granularity 1ms)", verify.Fail, false, true},
		{"token-bucket", "token-bucket(100000, 100000/1s)", verify.Inconclusive, false, false},
		{"token-bucket-published", "token-bucket(100000, 100000/1s, granularity 1s)", verify.Fail, true, false},
		{"redisson", "sliding-window(100000, 1s, granularity 1ms)", verify.Pass, false, false},
		{"redisson-per-client", "sliding-window(100000, 1s, granularity 1ms) per subject+client", verify.Pass, false, false},
		{"resource-consumer", "sliding-window(100000, 1s) and sliding-window(50000, 1s) per consumer", verify.Pass, false, false},
		{"resource-consumer-published", "sliding-window(100000, 1s, granularity 1s) and sliding-window(50000, 1s, granularity 1s) per consumer", verify.Fail, false, false},
		{"gcra", "token-bucket(100000, 100000/1s)", verify.Pass, false, false},
		{"sliding-counter", "fixed-window(100000, 1s)", verify.Pass, false, false},
		{"my-own-leaky-bucket-with-a-long-name", "first-hit-window(100000, 1m0s, granularity 1ms) per subject+client", verify.Fail, false, false},
		{"reference", "", verify.Inconclusive, false, false},
	}
	r.Entries = nil
	for _, topo := range []string{"single", "cluster"} {
		for i, row := range rows {
			e := base
			e.Algorithm, e.Topology = row.alg, topo
			e.Verification = verify.Summary{Verdict: row.verdict, Contract: row.contract, ExpectedViolation: row.expected,
				MayViolate: row.may, DefiniteViolations: 123456 * int64(i%2), PossibleViolations: 1234567}
			e.Accuracy = verify.AccuracySummary{MaxWindowRatio: 2.345, Efficiency: 1.3456}
			e.ThroughputRPS = 123456.7
			e.LatencyUS.P50, e.LatencyUS.P99 = 1234, 123456
			r.Entries = append(r.Entries, e)
		}
	}
	r.Environment.Topology = "single,cluster"
	return r
}

// measured matches what the measuring script writes into the page.
var measured = regexp.MustCompile(`<pre id="lb-measure">([^<]*)</pre>`)

// TestVerdictTableFitsA1400PixelWindow loads report.html of the widest verdict table (wideResult)
// in headless Chromium with a 1,400-pixel-wide window and checks that the table needs no
// horizontal scrolling: its scroll width is within its container's width, and the page is
// within the viewport. A copy of the page gets a script that writes the measures into the DOM
// (the report itself has no script); the browser's DOM dump carries them out.
func TestVerdictTableFitsA1400PixelWindow(t *testing.T) {
	browser := findChromium(t)
	dir := t.TempDir()
	r := wideResult(t)
	if err := WriteAll(dir, r); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	const probe = `<pre id="lb-measure"></pre><script>
const t = document.querySelector("table.v"), w = t.parentElement, d = document.documentElement;
document.getElementById("lb-measure").textContent = [window.innerWidth, t.scrollWidth, t.offsetWidth,
  w.clientWidth, w.scrollWidth, d.scrollWidth, d.clientWidth, t.tBodies[0].rows.length].join(" ");
</script></body>`
	page := filepath.Join(dir, "measure.html")
	if err := os.WriteFile(page, []byte(strings.Replace(string(html), "</body>", probe, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	netLog := filepath.Join(dir, "net.json")
	dom := runChromium(t, browser, netLog, "--window-size=1400,1000", "--dump-dom", "file://"+page)
	checkNoRequests(t, readNetLog(t, netLog))
	m := measured.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's DOM has no measures:\n%.2000s", dom)
	}
	var v []int
	for _, f := range strings.Fields(string(m[1])) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("measures %q: %v", m[1], err)
		}
		v = append(v, n)
	}
	if len(v) != 8 {
		t.Fatalf("measures %q; want 8 numbers", m[1])
	}
	viewport, tableScroll, tableW, wrapW, wrapScroll, docScroll, docW, rows := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	t.Logf("window %d px: table scroll width %d, width %d; container %d (scroll %d); page %d of %d; %d rows",
		viewport, tableScroll, tableW, wrapW, wrapScroll, docScroll, docW, rows)
	if viewport != 1400 {
		t.Fatalf("the window is %d pixels wide; want 1400", viewport)
	}
	if want := len(r.Entries); rows != want {
		t.Errorf("the verdict table has %d rows; want %d, one per entry", rows, want)
	}
	for _, c := range []struct {
		what      string
		got, most int
	}{
		{"the table's scroll width", tableScroll, wrapW},
		{"the container's scroll width", wrapScroll, wrapW},
		{"the page's scroll width", docScroll, docW},
	} {
		if c.got > c.most {
			t.Errorf("%s is %d pixels; want at most %d: the verdict table scrolls sideways in a 1400-pixel window", c.what, c.got, c.most)
		}
	}
	// Nothing is dropped: every entry's name, label and contract (each of its limits) is in the
	// table.
	for _, e := range r.Entries {
		for _, s := range append([]string{e.Algorithm, r.LabelOf(&e)}, strings.Split(orDefault(e.Verification.Contract, "none"), " and ")...) {
			if !strings.Contains(string(dom), xmlEscape(s)) {
				t.Errorf("%s: the page lacks %q", e.Name(), s)
			}
		}
	}
}
