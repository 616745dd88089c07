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
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// screenshotW is the width of the screenshot's window: wide enough that every figure is drawn at its
// natural size (one image pixel per screen pixel). Its height is set from the figures' heights, so
// that the whole page fits.
const screenshotW = 1200

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
	// Err is the request's final net error (0 for success; -105 is ERR_NAME_NOT_RESOLVED).
	Err int
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
		if r.Err == 0 {
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
		if !r.fromPage() {
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

// imgTag matches an <img> element's src in a DOM dump.
var imgTag = regexp.MustCompile(`<img\b[^>]*\bsrc="([^"]*)"`)

// TestReportHTMLInChromium loads report.html from disk in headless Chromium and checks what the
// browser really did: its net log shows no request from the page and no request answered; the
// DOM it built has one <img> per figure, each an inline PNG that decodes; and a screenshot of the
// whole page shows the verdict table (its badge colours) and every image, pixel for pixel. Set
// LIMITBENCH_SCREENSHOT to a path to keep the screenshot.
func TestReportHTMLInChromium(t *testing.T) {
	browser := findChromium(t)
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

	// The DOM as the browser built it: every image inline, decodable, one per figure.
	domLog := filepath.Join(dir, "net-dom.json")
	dom := runChromium(t, browser, domLog, "--dump-dom", "file://"+page)
	checkNoRequests(t, readNetLog(t, domLog))
	if !bytes.Contains(dom, []byte(`<table class="v verdicts">`)) {
		t.Fatalf("the browser's DOM has no verdict table:\n%.2000s", dom)
	}
	var imgs []image.Image
	for _, m := range imgTag.FindAllSubmatch(dom, -1) {
		src := string(m[1])
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

	// A screenshot of the whole page: the text above, between and below the figures takes well
	// under 4000 pixels.
	screenshotH := 4000
	for _, img := range imgs {
		screenshotH += img.Bounds().Dy() + 60
	}
	shot := filepath.Join(dir, "screenshot.png")
	if keep := os.Getenv("LIMITBENCH_SCREENSHOT"); keep != "" {
		shot = keep // lets a person look at what the browser drew
	}
	shotLog := filepath.Join(dir, "net-shot.json")
	runChromium(t, browser, shotLog, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", screenshotW, screenshotH), "file://"+page)
	checkNoRequests(t, readNetLog(t, shotLog))
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	decoded, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := decoded.Bounds(); b.Dx() != screenshotW || b.Dy() != screenshotH {
		t.Fatalf("screenshot is %dx%d; want the %dx%d window", b.Dx(), b.Dy(), screenshotW, screenshotH)
	}
	sc := toRGBA(decoded)
	bottom := lastInkRow(sc)
	if bottom >= screenshotH-50 {
		t.Errorf("the page reaches the screenshot's bottom edge (row %d): the window is too short to show all of it", bottom)
	}

	// Every figure, pixel for pixel. The images are in page order, so each is searched for below
	// the one before.
	firstFig, from := screenshotH, 0
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

	// The verdict table: its badges in every verdict's colour, together in one band, before the
	// first figure.
	badges := map[string]color.RGBA{
		"pass": rgb(0xdff3df), "fail": rgb(0xfbdcdc), "inconclusive": rgb(0xfdf0c8),
		"expected violation caught": rgb(0xdce8fb), "fail (tolerated)": rgb(0xf4e4f7), "reference": rgb(0xe8e8e8),
	}
	top := -1
	for y := 0; y < firstFig && top < 0; y++ {
		if countColour(sc, image.Rect(0, y, screenshotW, y+1), badges["pass"]) > 0 {
			top = y
		}
	}
	if top < 0 {
		t.Fatalf("no pass badge above the first figure (row %d): the verdict table is not in the screenshot", firstFig)
	}
	// Seven rows of about 30 pixels from the first badge.
	band := image.Rect(0, top, screenshotW, min(top+300, firstFig))
	for name, c := range badges {
		if n := countColour(sc, band, c); n < 50 {
			t.Errorf("the verdict table band %v has %d pixels of the %q badge colour %v; want a badge", band, n, name, c)
		}
	}
	t.Logf("verdict table from row %d; first figure at row %d; page ends at row %d of %d", top, firstFig, bottom, screenshotH)
}

// figureName returns the name of figure i, for messages.
func figureName(figs []string, i int) string {
	if i < len(figs) {
		return figs[i]
	}
	return "?"
}

// lastInkRow returns the last row of img that is not all white.
func lastInkRow(img *image.RGBA) int {
	for y := img.Rect.Dy() - 1; y >= 0; y-- {
		row := img.Pix[y*img.Stride : y*img.Stride+img.Rect.Dx()*4]
		for i := 0; i < len(row); i += 4 {
			if row[i] < 250 || row[i+1] < 250 || row[i+2] < 250 {
				return y
			}
		}
	}
	return -1
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
