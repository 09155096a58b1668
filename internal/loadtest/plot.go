package loadtest

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The plots WritePlots draws, by file name.
const (
	PlotQueue      = "queue.svg"
	PlotAdmissions = "admissions.svg"
	PlotActive     = "active.svg"
	PlotWait       = "wait.svg"       // Tier 2: estimated vs actual wait
	PlotWaitTier1  = "wait-tier1.svg" // Tier 1: estimated vs actual wait
)

// Plots are the plots' file names, in the order a reader meets them.
var Plots = []string{PlotQueue, PlotAdmissions, PlotActive, PlotWaitTier1, PlotWait}

// Series colours. None of them is the black of the axes or the grey of the
// grid, so e2e/plots.test.js can tell data from furniture by colour.
var (
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	green  = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	red    = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	slate  = color.RGBA{R: 90, G: 90, B: 140, A: 255}
	shade  = color.NRGBA{R: 214, G: 39, B: 40, A: 48}
)

// WritePlots draws the plots of res into dir.
func WritePlots(dir string, res *Result) error {
	for name, draw := range map[string]func(*Result) (*plot.Plot, error){
		PlotQueue: queuePlot, PlotAdmissions: admissionsPlot, PlotActive: activePlot, PlotWait: waitPlot, PlotWaitTier1: waitTier1Plot,
	} {
		p, err := draw(res)
		if err != nil {
			return fmt.Errorf("loadtest: plot %s: %w", name, err)
		}
		if err := save(p, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("loadtest: save %s: %w", name, err)
		}
	}
	return nil
}

// save writes p as a 16 × 9 cm SVG with its legend in a column of its own
// to the right of the data, where it can never cover a point.
func save(p *plot.Plot, path string) error {
	w, h := 16*vg.Centimeter, 9*vg.Centimeter
	c := vgsvg.New(w, h)
	full := draw.New(c)
	legend := p.Legend
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	lr := legend.Rectangle(full)
	lw := lr.Max.X - lr.Min.X
	if lw > 0 {
		lw += 0.6 * vg.Centimeter
	}
	p.Legend = plot.NewLegend() // drawn apart, below
	p.Draw(draw.Crop(full, 0, -lw, 0, 0))
	if lw > 0 {
		// Below the title, level with the top of the data.
		legend.Draw(draw.Crop(full, w-lw+0.3*vg.Centimeter, 0, 0, -p.Title.TextStyle.Height(p.Title.Text)-p.Title.Padding-0.2*vg.Centimeter))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Tick.Marker, p.Y.Tick.Marker = roundTicks{}, roundTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// fromZero makes both axes start at a labelled 0 and end on a round tick
// at or above the largest value.
func fromZero(p *plot.Plot, xmax, ymax float64) {
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max = roundUp(math.Max(xmax, 1))
	p.Y.Max = roundUp(math.Max(ymax, 1))
}

// niceStep is 1, 2 or 5 × 10^k, about a fifth of max.
func niceStep(max float64) float64 {
	raw := max / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// roundUp is the smallest multiple of niceStep(max) at or above max.
func roundUp(max float64) float64 {
	s := niceStep(max)
	return math.Ceil(max/s-1e-9) * s
}

// roundTicks labels 0 and every multiple of a round step (1, 2 or 5 ×
// 10^k) up to the axis' end, with no more decimals than the step has.
type roundTicks struct{}

func (roundTicks) Ticks(min, max float64) []plot.Tick {
	step := niceStep(max - min)
	decimals := max0(-int(math.Floor(math.Log10(step))))
	var ts []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max+step*1e-9; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return ts
}

func max0(x int) int { return max(x, 0) }

func line(p *plot.Plot, name string, c color.Color, pts plotter.XYs, dashed bool) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// faultMarks shades each injected fault's recovery window (from the fault
// to the first admission after it, see RecoverySeconds) and draws a dashed
// line at the fault itself. Call it before the series, so they stay on top.
func faultMarks(p *plot.Plot, res *Result, top float64) error {
	top = roundUp(math.Max(top, 1))
	for _, f := range res.Report.Faults {
		if !f.Injected {
			continue
		}
		if f.RecoverySeconds != nil && *f.RecoverySeconds > 0 && f.Kind != FaultJunkEvents {
			end := f.AtSeconds + *f.RecoverySeconds
			poly, err := plotter.NewPolygon(plotter.XYs{{X: f.AtSeconds, Y: 0}, {X: end, Y: 0}, {X: end, Y: top}, {X: f.AtSeconds, Y: top}})
			if err != nil {
				return err
			}
			poly.Color, poly.LineStyle.Width = shade, 0
			p.Add(poly)
			p.Legend.Add(fmt.Sprintf("recovery after %s (%.1f s)", f.Kind, *f.RecoverySeconds), poly)
		}
		l, err := plotter.NewLine(plotter.XYs{{X: f.AtSeconds, Y: 0}, {X: f.AtSeconds, Y: top}})
		if err != nil {
			return err
		}
		l.Color = red
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		p.Legend.Add(f.Kind+" (fault)", l)
	}
	return nil
}

// lastT is the time of the last sample or admission, for the x axis.
func lastT(res *Result) float64 {
	t := 0.0
	for _, s := range res.Samples {
		t = math.Max(t, s.T)
	}
	for _, v := range res.Visits {
		if !math.IsNaN(v.Active) {
			t = math.Max(t, v.Active)
		}
	}
	for _, f := range res.Report.Faults {
		if f.RecoverySeconds != nil {
			t = math.Max(t, f.AtSeconds+*f.RecoverySeconds)
		}
	}
	return t
}

const timeAxis = "time since the first arrival (s)"

func queuePlot(res *Result) (*plot.Plot, error) {
	p := newPlot("Line length over time", timeAxis, "visitors waiting")
	var t2, t1 plotter.XYs
	top := 0.0
	for _, s := range res.Samples {
		t2 = append(t2, plotter.XY{X: s.T, Y: float64(s.Tier2Queue)})
		t1 = append(t1, plotter.XY{X: s.T, Y: float64(s.Tier1Waiting)})
		top = math.Max(top, math.Max(float64(s.Tier2Queue), float64(s.Tier1Waiting)))
	}
	if err := faultMarks(p, res, top); err != nil {
		return nil, err
	}
	if err := line(p, "Tier 1 waiting", orange, t1, false); err != nil {
		return nil, err
	}
	if err := line(p, "Tier 2 line", blue, t2, false); err != nil {
		return nil, err
	}
	fromZero(p, lastT(res), top)
	return p, nil
}

func admissionsPlot(res *Result) (*plot.Plot, error) {
	p := newPlot("Admissions per second", timeAxis, "visitors let in (Tier 2 active) per s")
	per := map[int]float64{}
	last := 0
	for _, v := range res.Visits {
		if !math.IsNaN(v.Active) {
			s := int(v.Active)
			per[s]++
			last = max(last, s)
		}
	}
	pts := make(plotter.XYs, 0, last+1)
	top := 0.0
	for s := 0; s <= last; s++ {
		pts = append(pts, plotter.XY{X: float64(s), Y: per[s]})
		top = math.Max(top, per[s])
	}
	if err := faultMarks(p, res, top); err != nil {
		return nil, err
	}
	if err := line(p, "admissions/s", green, pts, false); err != nil {
		return nil, err
	}
	fromZero(p, lastT(res), top)
	return p, nil
}

func activePlot(res *Result) (*plot.Plot, error) {
	p := newPlot("Active visitors vs threshold", timeAxis, "visitors")
	var server, th plotter.XYs
	top := float64(res.Report.Threshold)
	for _, s := range res.Samples {
		server = append(server, plotter.XY{X: s.T, Y: float64(s.Tier2Active)})
		top = math.Max(top, float64(s.Tier2Active))
	}
	// Holders of an entry token as the visitors saw it (active answer until
	// they asked to leave), sampled at the server samples' times.
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for _, v := range res.Visits {
		if !math.IsNaN(v.Active) {
			evs = append(evs, ev{v.Active, 1})
			if !math.IsNaN(v.Left) {
				evs = append(evs, ev{v.Left, -1})
			}
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	var client plotter.XYs
	cur, k := 0, 0
	for _, s := range res.Samples {
		for k < len(evs) && evs[k].t <= s.T {
			cur += evs[k].d
			k++
		}
		client = append(client, plotter.XY{X: s.T, Y: float64(cur)})
		th = append(th, plotter.XY{X: s.T, Y: float64(res.Report.Threshold)})
	}
	if err := faultMarks(p, res, top); err != nil {
		return nil, err
	}
	if err := line(p, "active (server)", blue, server, false); err != nil {
		return nil, err
	}
	if err := line(p, "holding a token (visitors)", green, client, false); err != nil {
		return nil, err
	}
	if err := line(p, "threshold", slate, th, true); err != nil {
		return nil, err
	}
	fromZero(p, lastT(res), top)
	return p, nil
}

// maxScatter bounds the points of a wait plot.
const maxScatter = 2000

// scatter plots estimate against actual wait per visitor with the
// diagonal, the estimates shown in tier's page.
func scatter(tier string, actual, estimate func(Visit) float64, res *Result) (*plot.Plot, error) {
	p := newPlot("Estimated vs actual "+tier+" wait, per visitor", "actual wait (s)", "estimate shown first (s)")
	var pts plotter.XYs
	top := 1.0
	for _, v := range res.Visits {
		a, e := actual(v), estimate(v)
		if !math.IsNaN(e) && !math.IsNaN(a) {
			pts = append(pts, plotter.XY{X: a, Y: e})
			top = math.Max(top, math.Max(a, e))
		}
	}
	if n := len(pts); n > maxScatter {
		// Every k-th visitor keeps the SVG small and the picture the same.
		k := (n + maxScatter - 1) / maxScatter
		kept := pts[:0]
		for i := 0; i < n; i += k {
			kept = append(kept, pts[i])
		}
		pts = kept
		p.Title.Text += fmt.Sprintf(" (1 in %d of %d)", k, n)
	}
	top = roundUp(top)
	if err := line(p, "estimate = actual", slate, plotter.XYs{{X: 0, Y: 0}, {X: top, Y: top}}, true); err != nil {
		return nil, err
	}
	if len(pts) > 0 {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = blue
		sc.GlyphStyle.Radius = vg.Points(1.2)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add("visitor", sc)
	}
	fromZero(p, top, top)
	return p, nil
}

func waitPlot(res *Result) (*plot.Plot, error) {
	return scatter("Tier 2", func(v Visit) float64 { return v.ActualWait }, func(v Visit) float64 { return v.EstimateWait }, res)
}

func waitTier1Plot(res *Result) (*plot.Plot, error) {
	return scatter("Tier 1", func(v Visit) float64 { return v.Tier1Wait }, func(v Visit) float64 { return v.Tier1Estimate }, res)
}
