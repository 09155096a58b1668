package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/demo"
	"github.com/vwr-go/vwr/internal/edge"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/static"
)

// The browser side of `vwr local`: the waiting pages under /vwr/, the demo
// ticketing site behind the edge check (/events/…) and the queue gate
// (/api/seats/…), and the -demo flag that sets up an event one person can
// walk through end to end in about a minute.

// webFlags are the flags this file adds to `vwr local`.
var webFlags struct {
	demo      bool
	event     string
	threshold int64
	seats     int
	batch     int64
	crowd     int
	crowdStay time.Duration
}

func init() {
	registerLocal(localExtension{
		Name: "web",
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&webFlags.demo, "demo", false, "create and activate a demo event (Tier 1 queueing, small Tier 2 threshold, few seats) and print the URL to open")
			fs.StringVar(&webFlags.event, "demo-event", "demo", "id of the demo event")
			fs.Int64Var(&webFlags.threshold, "demo-threshold", 3, "Tier 2 threshold of the demo event (people choosing seats at once)")
			fs.IntVar(&webFlags.seats, "demo-seats", 24, "seats of the demo event, in rows of 8 (rounded up to full rows)")
			fs.Int64Var(&webFlags.batch, "demo-batch", 3, "Tier 1 visitors let in per advancer tick for the demo event")
			fs.IntVar(&webFlags.crowd, "demo-crowd", 8, "simulated visitors who arrive just before you, so every stage has a line (0: none)")
			fs.DurationVar(&webFlags.crowdStay, "demo-crowd-stay", 12*time.Second, "how long a simulated visitor stays on the seat page before leaving")
		},
		Mount: mountWeb,
	})
}

// demoVenue lays out n seats in rows of 8.
func demoVenue(n int) demo.Venue {
	perRow := min(max(n, 1), 8)
	rows := min((max(n, 1)+perRow-1)/perRow, demo.MaxRows)
	return demo.Venue{Name: "vwr demo night — live in concert", Rows: rows, PerRow: perRow}
}

func mountWeb(ctx context.Context, s *localStack) error {
	f := webFlags
	if !queue.ValidID(f.event) {
		return fmt.Errorf("-demo-event %q must match ^[A-Za-z0-9_-]{1,64}$", f.event)
	}
	if f.threshold < queue.MinThreshold || f.threshold > queue.MaxThreshold {
		return fmt.Errorf("-demo-threshold must be %d..%d", queue.MinThreshold, queue.MaxThreshold)
	}
	if f.seats < 1 || f.seats > demo.MaxRows*8 {
		return fmt.Errorf("-demo-seats must be 1..%d", demo.MaxRows*8)
	}
	if f.batch < tier1.MinBatchSize || f.batch > tier1.MaxBatchSize {
		return fmt.Errorf("-demo-batch must be %d..%d", tier1.MinBatchSize, tier1.MaxBatchSize)
	}
	if f.crowd < 0 || f.crowd > 1000 {
		return errors.New("-demo-crowd must be 0..1000")
	}
	venue := demoVenue(f.seats)
	site, err := demo.New(demo.Config{
		EntryKeys: s.Queue.EntryKeys,
		Redis:     s.Redis,
		Venues:    map[string]demo.Venue{f.event: venue},
		Clock:     s.Clock,
		Logger:    s.Log.With("component", "demo"),
	})
	if err != nil {
		return err
	}
	origin := site.Handler()
	// pages is read per request: -demo below may wrap it with the crowd
	// before the server starts.
	pages := static.Handler("/vwr/")
	s.Handle("/vwr/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { pages.ServeHTTP(w, r) }))
	s.Handle("GET /{$}", http.RedirectHandler("/events/"+url.PathEscape(f.event), http.StatusFound))
	// The edge check stands in front of everything no other route takes, as
	// the CloudFront Function does on the default behaviour: it decides on
	// the canonical path (so /EVENTS/x or /%65vents/x meet it too) and hands
	// the site that path; what is not an event page is the JSON 404.
	notFound := s.Queue.API.NotFound()
	s.Handle("/", edge.Middleware(s.Tier1Keys, s.Clock, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.EscapedPath(), edge.ProtectedPrefix) {
			origin.ServeHTTP(w, r)
			return
		}
		notFound.ServeHTTP(w, r)
	})))
	// The seat API needs an entry token; the gate checks it and hands the uid on.
	s.Handle("/api/seats/", s.Queue.Gate.Wrap(origin))
	s.Handle("/demo/assets/", origin)
	if !f.demo {
		return nil
	}

	t1 := tier1Of(s)
	if t1 == nil {
		return errors.New("-demo needs Tier 1 in vwr local, which is not mounted")
	}
	opens := time.Time{}
	if tier1Flags.demoOpens > 0 {
		opens = s.Clock.Now().Add(tier1Flags.demoOpens)
		if _, err := t1.Schedule(ctx, f.event, opens, time.Time{}); err != nil {
			return fmt.Errorf("schedule demo event in Tier 1: %w", err)
		}
		f.crowd = 0 // the simulated crowd takes plain positions; a pre-queue needs nonces
	}
	if _, err := t1.Activate(ctx, f.event, 1, f.batch); err != nil {
		return fmt.Errorf("activate demo event in Tier 1: %w", err)
	}
	if err := s.Queue.Service.SetThreshold(ctx, f.event, f.threshold); err != nil {
		return fmt.Errorf("set demo threshold: %w", err)
	}
	if f.crowd > 0 {
		c := &crowd{s: s, t1: t1, event: f.event, size: f.crowd, stay: f.crowdStay, ctx: ctx,
			seats: demo.NewStore(s.Redis), venue: venue}
		pages = c.arriveWith(pages)
	}
	s.Notef("demo: event %q is active: Tier 1 lets in %d per advancer tick, Tier 2 lets %d choose seats at once, %d seats, %d simulated visitors ahead",
		f.event, f.batch, f.threshold, venue.Total(), f.crowd)
	if !opens.IsZero() {
		s.Notef("demo: the sale opens at %s; until then arrivals join a pre-queue, drawn by a beacon lottery; verify the draw with: vwr verify-draw -event %s -url %s%s -chain-hash %s",
			opens.UTC().Format(time.RFC3339), f.event, s.URL, Tier1Prefix, localChainOf(s))
	}
	s.Notef("demo: open %s/events/%s", s.URL, url.PathEscape(f.event))
	return nil
}

// browsable turns a listen address like ":8080" or "[::]:8080" into one a
// browser can open.
func browsable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// crowd is the demo's simulated visitors. A burst of them arrives just
// before a person opens the waiting page, so that person sees a line at
// both tiers however long after start-up they come.
type crowd struct {
	s     *localStack
	t1    *tier1.Service
	event string
	size  int
	stay  time.Duration
	ctx   context.Context // the process's: walkers outlive the request
	seats *demo.Store
	venue demo.Venue

	mu     sync.Mutex
	bursts int
	last   time.Time
}

// crowdGap is the least time between two bursts.
const crowdGap = 45 * time.Second

// arriveWith wraps the waiting pages: a page load for the demo event lets a
// burst in first (at most one per crowdGap).
func (c *crowd) arriveWith(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("event") == c.event {
			c.burst(r.Context())
		}
		next.ServeHTTP(w, r)
	})
}

func (c *crowd) burst(ctx context.Context) {
	c.mu.Lock()
	if time.Since(c.last) < crowdGap {
		c.mu.Unlock()
		return
	}
	c.last = time.Now()
	c.bursts++
	n := c.bursts
	c.mu.Unlock()
	log := c.s.Log.With("component", "demo-crowd", "event", c.event)
	for i := range c.size {
		// Positions are taken here, before the page's own assign.
		a, err := c.t1.Assign(ctx, c.event, fmt.Sprintf("demo-crowd-%d-%d", n, i))
		if err != nil {
			log.Warn("demo crowd assign failed", "err", err)
			return
		}
		go c.walk(bot{requestID: a.RequestID, position: a.Position})
	}
	log.Info("demo crowd arrived", "size", c.size)
}

// crowdRenewEvery is how often a simulated visitor of the demo crowd
// renews its slot while it stays, as the seat page does.
const crowdRenewEvery = 8 * time.Second

// bot is one simulated visitor of the demo crowd.
type bot struct {
	requestID string
	position  int64
}

// walk moves one simulated visitor through both tiers like a browser would:
// wait for Tier 1, queue in Tier 2 at the Tier 1 position, choose seats for
// a while, then leave and free the slot.
func (c *crowd) walk(b bot) {
	ctx, s, event := c.ctx, c.s, c.event
	log := s.Log.With("component", "demo-crowd", "event", event, "uid", b.requestID)
	wait := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for {
		r, err := c.t1.Check(ctx, event, b.requestID)
		if err == nil && r.Admitted {
			break
		}
		if !wait(time.Second) {
			return
		}
	}
	who := queue.Identity{UserID: b.requestID, Position: b.position, Pass: true}
	for {
		v, err := s.Queue.Service.Check(ctx, event, who)
		if err == nil && v.Status == queue.StatusActive {
			break
		}
		if err != nil {
			log.Warn("demo crowd check failed", "err", err)
		}
		if !wait(time.Second) {
			return
		}
	}
	// Most people grab a seat while they are in; taken seats show on the map.
	if rand.N(4) > 0 {
		ids := c.venue.SeatIDs()
		seat := ids[rand.N(len(ids))]
		if _, err := c.seats.Hold(ctx, event, c.venue, seat, b.requestID, demo.DefaultHoldTTL, s.Clock.Now()); err != nil &&
			!errors.Is(err, demo.ErrSeatTaken) && !errors.Is(err, demo.ErrSoldOut) {
			log.Warn("demo crowd hold failed", "err", err)
		}
	}
	// Stay a little longer or shorter than asked, as people do, renewing
	// the slot as the seat page does (a silent holder is freed when idle).
	for left := c.stay/2 + rand.N(c.stay+1); left > 0; left -= crowdRenewEvery {
		if !wait(min(left, crowdRenewEvery)) {
			return
		}
		if left > crowdRenewEvery {
			if _, err := s.Queue.Service.Status(ctx, event, who); err != nil {
				log.Warn("demo crowd renewal failed", "err", err)
			}
		}
	}
	if _, err := s.Queue.Service.Leave(ctx, event, who); err != nil {
		log.Warn("demo crowd leave failed", "err", err)
	}
}
