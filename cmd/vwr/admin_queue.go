package main

import (
	"flag"
	"fmt"
	"net/http"

	"github.com/vwr-go/vwr/services/queue"
)

// Tier 2 actions of `vwr admin`: /api/queue/admin/… with the bearer token.
// A threshold set this way is written by Tier 2 to its durable settings
// store (Tier 1's store) and opens the event; stats say whether the event
// is recovering from a lost Redis.
func init() {
	registerAdmin(&adminAction{name: "stats", tier: 2, method: http.MethodGet,
		summary: `line, active users, threshold, and "recovering" while the queue rebuilds after a lost Redis`,
		flags:   noFlags})
	registerAdmin(&adminAction{name: "threshold", tier: 2, method: http.MethodPut, args: "-n N",
		summary: "set how many people may be on the protected pages at once (and open the event)",
		flags: func(fs *flag.FlagSet) func() (any, error) {
			n := fs.Int64("n", 0, fmt.Sprintf("users active at once (%d-%d, required)", queue.MinThreshold, queue.MaxThreshold))
			return func() (any, error) {
				if *n < queue.MinThreshold || *n > queue.MaxThreshold {
					return nil, fmt.Errorf("threshold needs -n N (%d-%d)", queue.MinThreshold, queue.MaxThreshold)
				}
				return map[string]int64{"threshold": *n}, nil
			}
		}})
}
