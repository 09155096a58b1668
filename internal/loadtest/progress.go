package loadtest

import (
	"io"

	"github.com/schollz/progressbar/v3"
)

// progress is the bar on stderr; with no writer it does nothing.
type progress struct{ bar *progressbar.ProgressBar }

func newProgress(w io.Writer, n int) progress {
	if w == nil {
		return progress{}
	}
	return progress{bar: progressbar.NewOptions(n,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("visitors done"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("visitors"),
		progressbar.OptionShowIts(),
		progressbar.OptionThrottle(200_000_000), // redraw at most 5 times a second
		progressbar.OptionOnCompletion(func() { _, _ = io.WriteString(w, "\n") }),
	)}
}

func (p progress) Add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

func (p progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
