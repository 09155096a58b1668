package loadtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Arrival curves. Each places N arrivals at offsets from the start of the
// run, averaging (burst, poisson), ending at (ramp) or starting at (sale)
// the given rate.
const (
	// ArrivalBurst is a flood at a constant rate: the moment a sale opens.
	ArrivalBurst = "burst"
	// ArrivalPoisson has exponential gaps with mean 1/rate: independent
	// visitors.
	ArrivalPoisson = "poisson"
	// ArrivalRamp rises linearly from 0 to the rate, reaching it with the
	// last visitor (so it lasts twice as long as a burst): a sale announced
	// in advance.
	ArrivalRamp = "ramp"
	// ArrivalSale is a sale's opening: the rate starts at its peak and falls
	// by e every τ = N ÷ rate seconds, so 1 − e^(−60/τ) of the crowd comes
	// within the first minute (70 % for 100,000 at 2,000/s) and the rest in
	// a tail (the last at τ·ln N).
	ArrivalSale = "sale"
)

// ArrivalKinds are the curves, for flags and errors.
var ArrivalKinds = []string{ArrivalBurst, ArrivalPoisson, ArrivalRamp, ArrivalSale}

// Arrivals returns n arrival offsets, ascending, for the named curve at rate
// visitors per second. rng drives the poisson curve only, so a seed
// reproduces a run's arrivals exactly.
func Arrivals(kind string, n int, rate float64, rng *rand.Rand) ([]time.Duration, error) {
	if n < 0 {
		return nil, fmt.Errorf("loadtest: visitors must be ≥ 0, not %d", n)
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("loadtest: rate must be a positive number of arrivals per second, not %v", rate)
	}
	out := make([]time.Duration, n)
	secs := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	switch kind {
	case ArrivalBurst:
		for i := range out {
			out[i] = secs(float64(i) / rate)
		}
	case ArrivalPoisson:
		if rng == nil {
			return nil, fmt.Errorf("loadtest: the poisson curve needs a random source")
		}
		t := 0.0
		for i := range out {
			out[i] = secs(t)
			t += rng.ExpFloat64() / rate
		}
	case ArrivalRamp:
		// Rate r(t) = rate·t/T over T = 2n/rate, so arrivals by time t are
		// rate·t²/(2T); the i-th arrives at t = 2·sqrt(n·i)/rate.
		for i := range out {
			out[i] = secs(2 * math.Sqrt(float64(n)*float64(i)) / rate)
		}
	case ArrivalSale:
		// Rate r(t) = rate·e^(−t/τ) with τ = n/rate: arrivals by t are
		// n·(1 − e^(−t/τ)), so the i-th arrives at t = −τ·ln(1 − i/n).
		tau := float64(n) / rate
		for i := range out {
			out[i] = secs(-tau * math.Log(1-float64(i)/float64(n)))
		}
	default:
		return nil, fmt.Errorf("loadtest: arrival must be one of %v, not %q", ArrivalKinds, kind)
	}
	return out, nil
}
