package report

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// TestReportHTMLInChromium loads report.html from disk in headless Chromium with networking features
// off, and checks the screenshot is a real rendering: a PNG of the window's size that is not blank
// and shows the plots (their algorithm colours appear). It also checks the HTML refers to no URL,
// so no request can leave the page.
func TestReportHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	browser := chromiumPath
	if _, err := os.Stat(browser); err != nil {
		p, lerr := exec.LookPath("chromium")
		if lerr != nil {
			t.Skipf("chromium is not installed (%v); .ci/run installs Debian's chromium package", err)
		}
		browser = p
	}
	dir := t.TempDir()
	if err := WriteAll(dir, readFixture(t, "result.json")); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, HTMLFile)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, html)

	shot := filepath.Join(dir, "screenshot.png")
	if keep := os.Getenv("LIMITBENCH_SCREENSHOT"); keep != "" {
		shot = keep // lets a person look at what the browser drew
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size=1200,3000",
		"file://"+page)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out.String())
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, out.String())
	}
	defer f.Close()
	img, format, err := image.Decode(f)
	if err != nil || format != "png" {
		t.Fatalf("screenshot is not a PNG: format %q, %v", format, err)
	}
	b := img.Bounds()
	if b.Dx() < 1000 || b.Dy() < 2000 {
		t.Errorf("screenshot is %dx%d; want the 1200x3000 window", b.Dx(), b.Dy())
	}
	colours := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0xff}]++
		}
	}
	total, most := 0, 0
	for _, n := range colours {
		total += n
		most = max(most, n)
	}
	if len(colours) < 50 || float64(most) > 0.97*float64(total) {
		t.Errorf("screenshot looks blank: %d colours, the commonest covers %d of %d samples", len(colours), most, total)
	}
	// The first figures are on screen: the algorithms' plot colours must appear.
	for _, alg := range []string{"gcra", "sliding-log", "token-bucket"} {
		if c := AlgorithmColor(alg); !nearColour(colours, c) {
			t.Errorf("screenshot shows no pixel in %s's colour %v: the plots did not render", alg, c)
		}
	}
}

// nearColour reports whether any sampled colour is within a small distance of c (PNG scaling
// blends edges, so exact matches are not required).
func nearColour(colours map[color.RGBA]int, c color.RGBA) bool {
	d := func(a, b uint8) int {
		if a > b {
			return int(a - b)
		}
		return int(b - a)
	}
	for k, n := range colours {
		if n >= 3 && d(k.R, c.R)+d(k.G, c.G)+d(k.B, c.B) <= 12 {
			return true
		}
	}
	return false
}
