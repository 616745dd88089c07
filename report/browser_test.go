package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// screenshotW is the width of the screenshot's window, 1,400 pixels: the width issue 31 reads the
// reports at, wide enough that every figure is drawn at its natural size (one image pixel per
// screen pixel).
const screenshotW = 1400

// findChromium returns the browser's path, or skips the test.
func findChromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if _, err := os.Stat(chromiumPath); err == nil {
		return chromiumPath
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skipf("chromium is not installed (%v); .ci/run installs Debian's chromium package", err)
	}
	return p
}

// runChromium runs headless Chromium with networking features off, a fresh profile, every host
// name mapped to nowhere, and a net log written to netLog; it returns what the browser printed on
// stdout (the DOM, with --dump-dom).
func runChromium(t *testing.T, browser, netLog string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(),
		// Nothing can resolve: a request that tried to leave would fail, and the net log shows it.
		"--host-resolver-rules=MAP * ~NOTFOUND",
		"--log-net-log=" + netLog,
		"--force-device-scale-factor=1",
	}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// netRequest is one URL request from Chromium's net log.
type netRequest struct {
	URL, Initiator, Isolation string
	// Err is the request's final net error (0 for success; -105 is ERR_NAME_NOT_RESOLVED);
	// Ended says that the log has the request's end: one the browser was still trying when it
	// stopped has none (nothing reached a host unless the log shows a TCP connection attempt,
	// which checkNoRequests fails on).
	Err   int
	Ended bool
}

// fromPage reports whether the page made the request (as opposed to the browser itself, whose
// requests have no origin).
func (r netRequest) fromPage() bool {
	return r.Initiator != "not an origin" || strings.Contains(r.Isolation, "file://")
}

// netLog is what the test reads from a Chromium net log: URL requests and TCP connection attempts.
type netLog struct {
	Requests []netRequest
	// TCP lists the addresses of TCP connection attempts.
	TCP []string
}

// readNetLog parses a Chromium --log-net-log file.
func readNetLog(t *testing.T, path string) netLog {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("net log: %v", err)
	}
	var raw struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int `json:"type"`
			Phase  int `json:"phase"`
			Source struct {
				ID int `json:"id"`
			} `json:"source"`
			Params map[string]any `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		// A browser that exits abruptly leaves the event list open; close it.
		if err2 := json.Unmarshal(append(bytes.TrimRight(bytes.TrimSpace(b), ","), []byte("]}")...), &raw); err2 != nil {
			t.Fatalf("net log %s: %v", path, err)
		}
	}
	names := map[int]string{}
	for name, id := range raw.Constants.LogEventTypes {
		names[id] = name
	}
	if _, ok := raw.Constants.LogEventTypes["URL_REQUEST_START_JOB"]; !ok {
		t.Fatalf("net log %s has no URL_REQUEST_START_JOB event type; is it a net log?", path)
	}
	const phaseBegin, phaseEnd = 1, 2
	var nl netLog
	open := map[int]int{} // source id → index in nl.Requests
	for _, ev := range raw.Events {
		str := func(k string) string { s, _ := ev.Params[k].(string); return s }
		switch names[ev.Type] {
		case "URL_REQUEST_START_JOB":
			switch ev.Phase {
			case phaseBegin:
				open[ev.Source.ID] = len(nl.Requests)
				nl.Requests = append(nl.Requests, netRequest{URL: str("url"), Initiator: str("initiator"),
					Isolation: str("network_isolation_key")})
			case phaseEnd:
				if i, ok := open[ev.Source.ID]; ok {
					nl.Requests[i].Ended = true
					if e, ok := ev.Params["net_error"].(float64); ok {
						nl.Requests[i].Err = int(e)
					}
				}
			}
		case "TCP_CONNECT", "TCP_CONNECT_ATTEMPT":
			if a := str("address"); a != "" && ev.Phase != phaseEnd {
				nl.TCP = append(nl.TCP, a)
			}
		}
	}
	return nl
}

// problems returns the requests the page made and every request that did not fail (each a request
// that could have left the machine).
func (nl netLog) problems() (fromPage, answered []netRequest) {
	for _, r := range nl.Requests {
		if r.fromPage() {
			fromPage = append(fromPage, r)
		}
		if r.Err == 0 && r.Ended {
			answered = append(answered, r)
		}
	}
	return fromPage, answered
}

// checkNoRequests fails the test for any request the page made, any request that was answered and
// any TCP connection attempt.
func checkNoRequests(t *testing.T, nl netLog) {
	t.Helper()
	fromPage, answered := nl.problems()
	for _, r := range fromPage {
		t.Errorf("the page requested %s (initiator %q); report.html must load nothing", r.URL, r.Initiator)
	}
	for _, r := range answered {
		t.Errorf("request to %s did not fail: something could have left the machine", r.URL)
	}
	for _, a := range nl.TCP {
		t.Errorf("the browser tried a TCP connection to %s", a)
	}
	for _, r := range nl.Requests {
		switch {
		case r.fromPage():
		case !r.Ended:
			t.Logf("the browser's own request (not the page's), unfinished when it stopped, no connection tried: %s", r.URL)
		default:
			t.Logf("the browser's own request (not the page's), refused: %s (net error %d)", r.URL, r.Err)
		}
	}
}

// TestNetLogSeesPageRequests is the control of the browser test: a page that does refer to hosts
// makes requests the net log check reports, so that its silence on report.html means something.
func TestNetLogSeesPageRequests(t *testing.T) {
	browser := findChromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "leaky.html")
	leaky := `<!DOCTYPE html><html><head><link rel="stylesheet" href="https://styles.invalid/a.css"></head>` +
		`<body><p>leaky</p><img src="http://images.invalid/x.png"></body></html>`
	if err := os.WriteFile(page, []byte(leaky), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "net.json")
	runChromium(t, browser, logPath, "--dump-dom", "file://"+page)
	fromPage, answered := readNetLog(t, logPath).problems()
	got := map[string]bool{}
	for _, r := range fromPage {
		got[r.URL] = true
	}
	for _, want := range []string{"https://styles.invalid/a.css", "http://images.invalid/x.png"} {
		if !got[want] {
			t.Errorf("the net log check did not see the page request %s; saw %+v", want, fromPage)
		}
	}
	if len(answered) > 0 {
		t.Errorf("requests answered although no host resolves: %+v", answered)
	}
}

// browserPage is a report loaded in headless Chromium driven by chromedp: Debian's chromium with
// networking features off, a fresh profile, every host name mapped to nowhere and a net log, and
// what the page did: the requests it made beyond its own file and inline data: URIs, and the
// errors of its console (console.error, uncaught exceptions, the browser's own error entries).
type browserPage struct {
	ctx    context.Context
	url    string
	netLog string
	cancel func()
	mu     sync.Mutex
	// requests and problems are what the page did that it must not.
	requests, problems []string
}

// openPage loads the file page in a window of w × h pixels and returns it once its body is
// there. The browser is stopped at the end of the test (or by close).
func openPage(t *testing.T, page string, w, h int) *browserPage {
	t.Helper()
	browser := findChromium(t)
	p := &browserPage{url: "file://" + page, netLog: filepath.Join(t.TempDir(), "net.json")}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(w, h), chromedp.Flag("force-device-scale-factor", "1"),
		// Nothing can resolve: a request that tried to leave would fail, and the net log shows it.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"), chromedp.Flag("log-net-log", p.netLog))
	ctx, cancel := chromedp.NewContext(actx)
	p.ctx = ctx
	p.cancel = func() { cancel(); cancelAlloc() }
	t.Cleanup(p.cancel)
	if err := chromedp.Listen(ctx, p.observe); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	p.do(t, chromedp.Navigate(p.url), chromedp.WaitReady("body"))
	return p
}

// observe records what the page must not do.
func (p *browserPage) observe(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if u := ev.Request.URL; u != p.url && !strings.HasPrefix(u, "data:") {
			p.requests = append(p.requests, u)
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.problems = append(p.problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		p.problems = append(p.problems, fmt.Sprintf("exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg))
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError {
			p.problems = append(p.problems, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
		}
	}
}

// do runs actions on the page within a minute.
func (p *browserPage) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("chromium: %v", err)
	}
}

// eval evaluates the JavaScript expression on the page and decodes its value into a T.
func eval[T any](t *testing.T, p *browserPage, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %.80q: %v", expr, err)
	}
	return v
}

// openAllDetails opens every <details> of the page (the report keeps its details collapsed).
const openAllDetails = `(function () { var ds = document.querySelectorAll("details"); for (var i = 0; i < ds.length; i++) { ds[i].open = true; } return ds.length; })()`

// close stops the browser and fails t for every request the page made, every console error,
// and anything in the net log that could have left the machine.
func (p *browserPage) close(t *testing.T) {
	t.Helper()
	if err := chromedp.Cancel(p.ctx); err != nil { // closes the browser, which ends its net log
		t.Logf("close chromium: %v", err)
	}
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range p.requests {
		t.Errorf("the page requested %s; it must load nothing", u)
	}
	for _, m := range p.problems {
		t.Errorf("the page logged an error: %s", m)
	}
	checkNoRequests(t, readNetLog(t, p.netLog))
}

// TestReportHTMLInChromium loads report.html from disk in headless Chromium and checks what the
// browser really did: no request from the page, none answered, nothing in its console; the DOM
// has one <img> per figure, each an inline PNG that decodes; and a screenshot of the whole
// page, every <details> opened, at 1,400 pixels, shows the decision table and the verdict
// table (their badge colours) and every image, pixel for pixel. Set LIMITBENCH_SCREENSHOT to a
// path to keep the screenshot.
func TestReportHTMLInChromium(t *testing.T) {
	dir := t.TempDir()
	r := readFixture(t, "result.json")
	if err := WriteAll(dir, r); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, HTMLFile)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, html)
	var figs []string // figure names, in page order (WriteAll lists each as PNG then SVG)
	for _, p := range r.Files.Plots {
		if name, ok := strings.CutSuffix(p, ".png"); ok {
			figs = append(figs, name)
		}
	}
	p := openPage(t, page, screenshotW, 1000)
	eval[int](t, p, openAllDetails)
	var imgs []image.Image
	for _, src := range eval[[]string](t, p, `Array.prototype.map.call(document.images, function (i) { return i.src; })`) {
		data, ok := strings.CutPrefix(src, "data:image/png;base64,")
		if !ok {
			t.Errorf("<img src=%.60q> is not an inline PNG data: URI", src)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Errorf("<img> data: URI is not base64: %v", err)
			continue
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Errorf("<img> data: URI does not decode as PNG: %v", err)
			continue
		}
		imgs = append(imgs, img)
	}
	if len(imgs) != len(figs) {
		t.Errorf("the DOM has %d decodable images; want %d, one per figure", len(imgs), len(figs))
	}
	shot := fullScreenshot(t, p)
	p.close(t)
	sc := toRGBA(shot)
	if b := sc.Rect; b.Dx() != screenshotW {
		t.Fatalf("screenshot is %d pixels wide; want the %d of the window", b.Dx(), screenshotW)
	}
	firstFig, from := sc.Rect.Dy(), 0
	for i, img := range imgs {
		at, ok := findImage(sc, toRGBA(img), from)
		if !ok {
			t.Errorf("image %d (%s, %dx%d) is not in the screenshot below row %d", i, figureName(figs, i),
				img.Bounds().Dx(), img.Bounds().Dy(), from)
			continue
		}
		firstFig = min(firstFig, at.Y)
		from = at.Y + img.Bounds().Dy()
	}
	badges := map[string]color.RGBA{
		"pass": rgb(0xdff3df), "fail": rgb(0xfbdcdc), "inconclusive": rgb(0xfdf0c8),
		"expected violation caught": rgb(0xdce8fb), "fail (tolerated)": rgb(0xf4e4f7), "reference": rgb(0xe8e8e8),
	}
	for _, table := range []struct {
		selector string
		want     []string
	}{
		{"table.decision", []string{"pass", "fail", "inconclusive", "expected violation caught", "fail (tolerated)"}},
		{"table.verdicts", []string{"pass", "fail", "inconclusive", "expected violation caught", "fail (tolerated)", "reference"}},
	} {
		band := elementRect(t, shot, sc, table.selector)
		if band.Min.Y >= firstFig {
			t.Errorf("%s (rows %d–%d) is not above the first figure (row %d)", table.selector, band.Min.Y, band.Max.Y, firstFig)
		}
		for _, name := range table.want {
			if n := countColour(sc, band, badges[name]); n < 50 {
				t.Errorf("%s %v has %d pixels of the %q badge colour; want a badge", table.selector, band, n, name)
			}
		}
	}
}

// elementRects holds the page rectangles of elements, by selector, as fullScreenshot measured
// them (document coordinates, as a full-page screenshot has them).
var elementRects = map[image.Image]map[string]image.Rectangle{}

// fullScreenshot takes a screenshot of the whole page at its width (one screen pixel per CSS
// pixel), keeps it at $LIMITBENCH_SCREENSHOT when set, and measures, for elementRect, where the
// page's tables are.
func fullScreenshot(t *testing.T, p *browserPage) image.Image {
	t.Helper()
	rects := eval[map[string][4]float64](t, p, `(function () {
  var out = {}, sels = ["table.decision", "table.verdicts", ".xp"];
  for (var i = 0; i < sels.length; i++) {
    var e = document.querySelector(sels[i]);
    if (e) { var r = e.getBoundingClientRect(); out[sels[i]] = [r.left + window.scrollX, r.top + window.scrollY, r.right + window.scrollX, r.bottom + window.scrollY]; }
  }
  return out;
})()`)
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if keep := os.Getenv("LIMITBENCH_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	m := map[string]image.Rectangle{}
	for sel, r := range rects {
		m[sel] = image.Rect(int(r[0]), int(r[1]), int(r[2]), int(r[3]))
	}
	elementRects[img] = m
	return img
}

// elementRect returns where the element selector is in the screenshot img, failing t when the page
// had none.
func elementRect(t *testing.T, img image.Image, sc *image.RGBA, selector string) image.Rectangle {
	t.Helper()
	r, ok := elementRects[img][selector]
	if !ok {
		t.Fatalf("the page has no %s", selector)
	}
	return r.Intersect(sc.Rect)
}

// figureName returns the name of figure i, for messages.
func figureName(figs []string, i int) string {
	if i < len(figs) {
		return figs[i]
	}
	return "?"
}

// countColour counts the pixels of img inside r within a small distance of c (text antialiasing
// and colour conversion may shift a value by a few units).
func countColour(img *image.RGBA, r image.Rectangle, c color.RGBA) int {
	r = r.Intersect(img.Rect)
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			p := img.Pix[y*img.Stride+x*4:]
			d := 0
			for i, w := range []uint8{c.R, c.G, c.B} {
				v := int(p[i]) - int(w)
				d += max(v, -v)
			}
			if d <= 6 {
				n++
			}
		}
	}
	return n
}

// findImage looks for im drawn at its natural size in sc, at row from or below, and returns its
// top-left corner. It compares a sample of im's non-white pixels; nearly all must match.
func findImage(sc, im *image.RGBA, from int) (image.Point, bool) {
	iw, ih := im.Rect.Dx(), im.Rect.Dy()
	sw, sh := sc.Rect.Dx(), sc.Rect.Dy()
	var samples []int // offsets into im.Pix
	step := max(1, iw*ih/4000)
	for i := 0; i < iw*ih; i += step {
		o := (i/iw)*im.Stride + (i%iw)*4
		if p := im.Pix[o : o+3]; p[0] < 240 || p[1] < 240 || p[2] < 240 {
			samples = append(samples, o)
		}
	}
	if len(samples) < 20 {
		return image.Point{}, false
	}
	// near compares the pixel at offset o of im with the one at (x, y) + o's position in sc.
	near := func(o, x, y int) bool {
		px, py := (o%im.Stride)/4, o/im.Stride
		so := (y+py)*sc.Stride + (x+px)*4
		d := 0
		for c := 0; c < 3; c++ {
			v := int(im.Pix[o+c]) - int(sc.Pix[so+c])
			d += max(v, -v)
		}
		return d <= 24
	}
	allowed := len(samples) / 50
	for y := max(0, from); y+ih <= sh; y++ {
		for x := 0; x+iw <= sw; x++ {
			if !near(samples[0], x, y) {
				continue
			}
			miss := 0
			for _, o := range samples {
				if !near(o, x, y) {
					if miss++; miss > allowed {
						break
					}
				}
			}
			if miss <= allowed {
				return image.Pt(x, y), true
			}
		}
	}
	return image.Point{}, false
}

// toRGBA returns img as an *image.RGBA whose bounds start at (0, 0).
func toRGBA(img image.Image) *image.RGBA {
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, img, b.Min, draw.Src)
	return out
}
