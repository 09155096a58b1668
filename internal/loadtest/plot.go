package loadtest

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The plots WritePlots draws, by file name.
const (
	PlotQueue      = "queue.svg"
	PlotAdmissions = "admissions.svg"
	PlotActive     = "active.svg"
	PlotWait       = "wait.svg"
)

var (
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	green  = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	red    = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	grey   = color.RGBA{R: 127, G: 127, B: 127, A: 255}
)

// WritePlots draws the four SVG plots of res into dir.
func WritePlots(dir string, res *Result) error {
	for name, draw := range map[string]func(*Result) (*plot.Plot, error){
		PlotQueue: queuePlot, PlotAdmissions: admissionsPlot, PlotActive: activePlot, PlotWait: waitPlot,
	} {
		p, err := draw(res)
		if err != nil {
			return fmt.Errorf("loadtest: plot %s: %w", name, err)
		}
		if err := p.Save(16*vg.Centimeter, 9*vg.Centimeter, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("loadtest: save %s: %w", name, err)
		}
	}
	return nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

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

// faultMarks draws a vertical dashed line at each injected fault.
func faultMarks(p *plot.Plot, res *Result, top float64) error {
	for _, f := range res.Report.Faults {
		if !f.Injected {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: f.AtSeconds, Y: 0}, {X: f.AtSeconds, Y: math.Max(top, 1)}})
		if err != nil {
			return err
		}
		l.Color = red
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		p.Legend.Add(f.Kind, l)
	}
	return nil
}

func queuePlot(res *Result) (*plot.Plot, error) {
	p := newPlot("Line length over time", "seconds since the first arrival", "visitors waiting")
	var t2, t1 plotter.XYs
	top := 0.0
	for _, s := range res.Samples {
		t2 = append(t2, plotter.XY{X: s.T, Y: float64(s.Tier2Queue)})
		t1 = append(t1, plotter.XY{X: s.T, Y: float64(s.Tier1Waiting)})
		top = math.Max(top, math.Max(float64(s.Tier2Queue), float64(s.Tier1Waiting)))
	}
	if err := line(p, "Tier 1 waiting (not yet served)", orange, t1, false); err != nil {
		return nil, err
	}
	if err := line(p, "Tier 2 line", blue, t2, false); err != nil {
		return nil, err
	}
	return p, faultMarks(p, res, top)
}

func admissionsPlot(res *Result) (*plot.Plot, error) {
	p := newPlot("Admissions per second", "seconds since the first arrival", "visitors admitted (Tier 2 active)")
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
	if err := line(p, "admissions/s", green, pts, false); err != nil {
		return nil, err
	}
	return p, faultMarks(p, res, top)
}

func activePlot(res *Result) (*plot.Plot, error) {
	p := newPlot("Active visitors vs threshold", "seconds since the first arrival", "visitors")
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
	if err := line(p, "active (server)", blue, server, false); err != nil {
		return nil, err
	}
	if err := line(p, "holding a token (visitors)", green, client, false); err != nil {
		return nil, err
	}
	if err := line(p, "threshold", grey, th, true); err != nil {
		return nil, err
	}
	return p, faultMarks(p, res, top)
}

// maxScatter bounds the points of the wait plot.
const maxScatter = 2000

func waitPlot(res *Result) (*plot.Plot, error) {
	p := newPlot("Estimated vs actual Tier 2 wait, per visitor", "actual wait (s)", "estimate shown on joining (s)")
	var pts plotter.XYs
	top := 1.0
	for _, v := range res.Visits {
		if !math.IsNaN(v.EstimateWait) && !math.IsNaN(v.ActualWait) {
			pts = append(pts, plotter.XY{X: v.ActualWait, Y: v.EstimateWait})
			top = math.Max(top, math.Max(v.ActualWait, v.EstimateWait))
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
		p.Title.Text += fmt.Sprintf(" (1 in %d of %d visitors)", k, n)
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
	return p, line(p, "estimate = actual", grey, plotter.XYs{{X: 0, Y: 0}, {X: top, Y: top}}, true)
}
