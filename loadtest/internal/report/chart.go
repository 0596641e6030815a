package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Chart draws rate (top) and latency (bottom) over time for each phase.
func (r *Report) Chart(path string) error {
	rates := plot.New()
	rates.Title.Text = fmt.Sprintf("%s: items per second", r.Plan.Scenario)
	rates.X.Label.Text = "time (s)"
	rates.Y.Label.Text = "items/s"
	rates.Legend.Top = true
	lat := plot.New()
	lat.Title.Text = "latency"
	lat.X.Label.Text = "time (s)"
	lat.Y.Label.Text = "ms"
	lat.Legend.Top = true
	rates.Y.Min, lat.Y.Min = 0, 0
	palette := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	}
	next := 0
	add := func(p *plot.Plot, name string, samples []Sample, y func(Sample) float64, dashed bool) error {
		pts := make(plotter.XYs, 0, len(samples))
		for _, s := range samples {
			if v := y(s); !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: s.At, Y: v})
			}
		}
		if len(pts) == 0 {
			return nil
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[next%len(palette)]
		next++
		l.Width = vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	for _, ph := range r.phases() {
		s := ph.Samples
		err := add(rates, ph.Name+" rate", s, func(s Sample) float64 { return s.Rate }, false)
		if err == nil && ph.Export == "arc" && slices.ContainsFunc(s, func(s Sample) bool { return s.Durable > 0 }) {
			err = add(rates, ph.Name+" durable", s, func(s Sample) float64 { return s.Durable }, true)
		}
		if err == nil && ph == r.Arc && (ph.Target > 0 || r.Sweep != nil) {
			err = add(rates, "target", s, func(s Sample) float64 { return s.Target }, true)
		}
		if err == nil {
			err = add(lat, ph.Name+" request p99", s, func(s Sample) float64 { return float64(s.Latency.P99) }, false)
		}
		if err == nil && ph.Export == "arc" {
			err = add(lat, ph.Name+" durable-ack p99", s, func(s Sample) float64 { return float64(s.AckLatency.P99) }, false)
			if err == nil {
				err = add(lat, ph.Name+" durable-ack p50", s, func(s Sample) float64 { return float64(s.AckLatency.P50) }, true)
			}
		}
		if err != nil {
			return err
		}
	}
	const w, h = 10 * vg.Inch, 8 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	rates.Draw(tiles.At(dc, 0, 0))
	lat.Draw(tiles.At(dc, 0, 1))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
