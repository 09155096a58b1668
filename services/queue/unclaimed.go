package queue

import (
	"slices"
	"sync"
	"time"
)

// ClaimHorizon is how long an instance remembers a user its worker let in
// who has not yet fetched the entry token: a waiting page checks again within
// its nextPoll (LongestNextPoll at most), on an instance whose clock may be
// MaxClockSkew off.
const ClaimHorizon = LongestNextPoll + MaxClockSkew

// unclaimed remembers, per event, the users this instance's worker admitted
// in the last ClaimHorizon and has not yet seen fetch a token. The store
// forgets them with everything else when Redis is lost, and they hold no
// token that could count them back in (see CheckInput.HolderSlotEnd), so
// without this memory their admission would be lost: they would wait again,
// behind nobody but still after people the worker let in with them. On a
// loss the instance puts them back into the active set (Store.Replay). The
// durable ledger (Service.UseLedger) covers them too once the worker has
// appended them; this memory covers the moments before, and deployments
// without a ledger.
type unclaimed struct {
	mu     sync.Mutex
	events map[string]*claimLog
}

// claimLog is one event's unclaimed admissions: live by user, and their
// order of admission so that expiry pops from the front.
type claimLog struct {
	live  map[string]claim
	order []claimRef
}

type claim struct {
	at, expires time.Time // admitted at; end of the slot
	header      bool      // named by a trusted header, not a Tier 1 pass
}

type claimRef struct {
	uid string
	at  time.Time
}

// add remembers users admitted to eventID at now with slots ending at
// expires; header lists those named by a trusted header.
func (u *unclaimed) add(eventID string, users, header []string, now, expires time.Time) {
	if len(users) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.events == nil {
		u.events = map[string]*claimLog{}
	}
	l := u.events[eventID]
	if l == nil {
		l = &claimLog{live: map[string]claim{}}
		u.events[eventID] = l
	}
	for _, uid := range users {
		l.live[uid] = claim{at: now, expires: expires, header: slices.Contains(header, uid)}
		l.order = append(l.order, claimRef{uid, now})
	}
	l.prune(now.Add(-ClaimHorizon))
}

// forget drops a user who has fetched a token (or left): from now on the
// token, not this memory, speaks for them.
func (u *unclaimed) forget(eventID, userID string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if l := u.events[eventID]; l != nil {
		delete(l.live, userID)
	}
}

// pending lists eventID's unclaimed admissions whose slot runs past now.
func (u *unclaimed) pending(eventID string, now time.Time) []Served {
	u.mu.Lock()
	defer u.mu.Unlock()
	l := u.events[eventID]
	if l == nil {
		return nil
	}
	l.prune(now.Add(-ClaimHorizon))
	out := make([]Served, 0, len(l.live))
	for uid, c := range l.live {
		if c.expires.After(now) {
			out = append(out, Served{UserID: uid, Pass: !c.header, SlotEnd: c.expires})
		}
	}
	return out
}

// eventIDs lists the events with unclaimed admissions.
func (u *unclaimed) eventIDs() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for ev, l := range u.events {
		if len(l.live) > 0 {
			out = append(out, ev)
		}
	}
	return out
}

// sweep drops every event's admissions older than the horizon, and the
// events left with none, so that quiet events cost no memory.
func (u *unclaimed) sweep(now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for ev, l := range u.events {
		l.prune(now.Add(-ClaimHorizon))
		if len(l.order) == 0 {
			delete(u.events, ev)
		}
	}
}

// prune pops admissions at or before cutoff. A user admitted twice keeps
// the later record.
func (l *claimLog) prune(cutoff time.Time) {
	i := 0
	for ; i < len(l.order) && !l.order[i].at.After(cutoff); i++ {
		r := l.order[i]
		if c, ok := l.live[r.uid]; ok && c.at.Equal(r.at) {
			delete(l.live, r.uid)
		}
	}
	if i > 0 {
		l.order = append(l.order[:0:0], l.order[i:]...)
	}
	if len(l.live) == 0 {
		l.order = nil
	}
}
