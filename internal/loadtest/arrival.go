package loadtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Arrival curves. Each places N arrivals at offsets from the start of the
// run, averaging (burst, poisson) or ending at (ramp) the given rate.
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
)

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
	default:
		return nil, fmt.Errorf("loadtest: arrival must be %s, %s or %s, not %q", ArrivalBurst, ArrivalPoisson, ArrivalRamp, kind)
	}
	return out, nil
}
