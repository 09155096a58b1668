package loadtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressState is the sale as the progress line shows it.
type progressState struct {
	T                      float64 // seconds since the first arrival
	Arrived, Total         int64
	Tier1Waiting           int64 // from the servers' counters (the sampler)
	Tier2Line, Tier2Active int64
	Threshold              int64
	Admitted, Done         int64
}

// progress writes the sale's state while a rehearsal runs: who has
// arrived, who waits at each tier, who is in and how fast they go in. On a
// terminal it redraws one line in place every second; anywhere else (a
// file, a CI log) it writes a plain line every 10 s and never a \r.
type progress struct {
	w     io.Writer
	tty   bool
	state func() progressState

	mu      sync.Mutex
	history []progressState // the last few seconds, for the rate
	width   int             // of the line last drawn in place
	stop    chan struct{}
	done    chan struct{}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, state func() progressState) *progress {
	if w == nil {
		return nil
	}
	return &progress{w: w, tty: isTerminal(w), state: state, stop: make(chan struct{}), done: make(chan struct{})}
}

// run draws until ctx ends or Finish is called.
func (p *progress) run(ctx context.Context) {
	if p == nil {
		return
	}
	defer close(p.done)
	every := 10 * time.Second
	if p.tty {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.stop:
			return
		case <-t.C:
			p.draw(false)
		}
	}
}

// Finish stops the line and writes the final state on a line of its own.
func (p *progress) Finish() {
	if p == nil {
		return
	}
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.draw(true)
}

func (p *progress) draw(final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.state()
	p.history = append(p.history, s)
	// The admission rate over the last 5 s (or since the start).
	first := p.history[0]
	for _, h := range p.history {
		if s.T-h.T <= 5 {
			first = h
			break
		}
	}
	if len(p.history) > 20 {
		p.history = p.history[len(p.history)-20:]
	}
	rate := 0.0
	if dt := s.T - first.T; dt > 0 {
		rate = float64(s.Admitted-first.Admitted) / dt
	}
	line := formatProgress(s, rate)
	switch {
	case p.tty && !final:
		pad := ""
		if n := p.width - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		p.width = len(line)
		fmt.Fprintf(p.w, "\r%s%s", line, pad)
	case p.tty:
		fmt.Fprintf(p.w, "\r%s%s\n", line, strings.Repeat(" ", max(p.width-len(line), 0)))
	default:
		fmt.Fprintln(p.w, line)
	}
}

// formatProgress is one line of the sale's state.
func formatProgress(s progressState, rate float64) string {
	return fmt.Sprintf("%6.1f s  arrived %d/%d  waiting: Tier 1 %d, Tier 2 %d  active %d/%d  admitted %d (%.1f/s)  done %d",
		s.T, s.Arrived, s.Total, s.Tier1Waiting, s.Tier2Line, s.Tier2Active, s.Threshold, s.Admitted, rate, s.Done)
}
