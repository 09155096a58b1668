package loadtest

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// ReportFile is the name of the report in the output folder.
const ReportFile = "report.json"

// WriteOutputs writes report.json and the plots into dir, creating it.
func WriteOutputs(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res.Report, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ReportFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := writeVisits(filepath.Join(dir, VisitsFile), res.Visits); err != nil {
		return err
	}
	if len(res.PassedOver) > 0 {
		if err := writePassedOver(filepath.Join(dir, PassedOverFile), res.PassedOver); err != nil {
			return err
		}
	}
	return WritePlots(dir, res)
}

// VisitsFile is every visitor's journey, one CSV row each.
const VisitsFile = "visitors.csv"

func writeVisits(path string, vs []Visit) error {
	num := func(x float64) string {
		if math.IsNaN(x) {
			return ""
		}
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
	rows := make([][]string, 0, len(vs))
	for _, v := range vs {
		rows = append(rows, []string{strconv.FormatInt(v.Position, 10), num(v.Arrived), num(v.Tier1Admit), num(v.Active), num(v.Left),
			num(v.EstimateWait), num(v.ActualWait), num(v.Tier1Estimate), num(v.Tier1Wait)})
	}
	return writeCSV(path, []string{"position", "arrived", "tier1Admitted", "active", "left", "tier2EstimateSeconds", "tier2ActualWaitSeconds",
		"tier1EstimateSeconds", "tier1ActualWaitSeconds"}, rows)
}

// PassedOverFile explains the Tier 2 inversions, one CSV row each; it is
// written only when there are some.
const PassedOverFile = "passed-over.csv"

func writePassedOver(path string, ps []PassedOver) error {
	sec := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	rows := make([][]string, 0, len(ps))
	for _, p := range ps {
		rows = append(rows, []string{strconv.FormatInt(p.APosition, 10), sec(p.AJoined), sec(p.ALastQueued), strconv.Itoa(p.AInstance),
			strconv.FormatInt(p.BPosition, 10), sec(p.BAfter), sec(p.BActive), strconv.FormatBool(p.BDirect), strconv.Itoa(p.BInstance)})
	}
	return writeCSV(path, []string{"aPosition", "aJoined", "aLastQueued", "aInstance", "bPosition", "bAfter", "bActive", "bDirect", "bInstance"}, rows)
}

// writeCSV writes a header and rows to a new file at path.
func writeCSV(path string, header []string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows) // WriteAll flushes
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// errLine is "median M %, p90 P % (N)" of a WaitError.
func errLine(e WaitError) string {
	return fmt.Sprintf("median %.0f %%, p90 %.0f %% (%d)", 100*e.Median, 100*e.P90, e.Samples)
}

// Summary prints the few lines a person reads after a rehearsal.
func Summary(w io.Writer, rep Report) {
	v := rep.Visitors
	fmt.Fprintf(w, "%d visitors (%s at %.0f/s) against %s in %.1f s\n", v.Total, v.Arrival, v.RatePerSecond, v.Target, v.DurationSeconds)
	fmt.Fprintf(w, "  admitted %d, left %d, direct entries %d; lost %d (gave up %d, took a new place %d); unfinished %d (still waiting when the run ended)\n",
		v.Admitted, v.Left, v.DirectEntries, rep.LostVisitors, v.GaveUp, v.Requeued, v.Unfinished)
	if v.PowSolveMs != nil {
		fmt.Fprintf(w, "  proof of work (%d expected hashes): solved in %.0f ms median, %.0f ms p90 (%d solves, %.0f hashes/s); %d tickets cost one client %.0f CPU-seconds\n",
			v.PowCost.ExpectedHashes, v.PowSolveMs.Median, v.PowSolveMs.P90, v.PowSolveMs.Samples, v.PowCost.HashesPerSecond, v.PowCost.Tickets, v.PowCost.CPUSeconds)
	}
	if v.SeatsHeld+v.SoldOut > 0 {
		fmt.Fprintf(w, "  seats: %d held, %d found it sold out, %d held twice", v.SeatsHeld, v.SoldOut, v.SeatsHeldTwice)
		if v.SeatsReheldAfterLoss > 0 {
			fmt.Fprintf(w, "; %d held again after a fault emptied the Redis the holds lived in (not counted twice)", v.SeatsReheldAfterLoss)
		}
		fmt.Fprintln(w)
	}
	if late := v.StepLateMs; late.P99 > 1000 {
		fmt.Fprintf(w, "  warning: the tool sent requests up to %.1f s late (p99; median %.0f ms): it or the machine was saturated; measured waits leave out its lateness in noticing a turn, but not the servers slowed by the same load\n",
			late.P99/1000, late.P50)
	}
	fmt.Fprintf(w, "  throughput: %.0f requests/s, %.1f admissions/s (peak %d in one second)\n",
		rep.ThroughputPerSecond.Requests, rep.ThroughputPerSecond.Admissions, rep.ThroughputPerSecond.PeakAdmissions)
	fmt.Fprintf(w, "  order: %d Tier 1 and %d Tier 2 inversions; active at most %d of threshold %d (%d over-admissions); %d admitted twice\n",
		rep.Inversions.Tier1, rep.Inversions.Tier2, rep.MaxActive, rep.Threshold, rep.OverAdmissions, rep.AdmittedTwice)
	if v.Reentered > 0 {
		fmt.Fprintf(w, "  re-entry: %d left and tried the same pass again, %d told done\n", v.Reentered, v.ReentryRefused)
	}
	we := rep.WaitEstimateError
	for _, tier := range []struct {
		name string
		w    *WaitError
	}{{"Tier 1", we.Tier1}, {"Tier 2", &we}} {
		if tier.w == nil {
			continue
		}
		fmt.Fprintf(w, "  %s wait estimate error: first %s", tier.name, errLine(*tier.w))
		if tier.w.Later != nil {
			fmt.Fprintf(w, "; later %s", errLine(*tier.w.Later))
		}
		fmt.Fprintln(w)
	}
	if a := we.Tier1; a != nil && a.PeopleAhead != nil && a.PeopleAhead.Samples > 0 {
		pa := a.PeopleAhead
		fmt.Fprintf(w, "  Tier 1 people ahead: %.1f %% of %d counts within 2 %% of the line or 16 people; error median %.2f %%, p90 %.2f %% of the line\n",
			100*pa.WithinBound, pa.Samples, 100*pa.MedianOfLine, 100*pa.P90OfLine)
	}
	if pa := we.PeopleAheadError; pa != nil {
		fmt.Fprintf(w, "  Tier 2 people ahead vs the exact rank: %d sampled queued polls, %.0f %% estimated; error max %d, p99 %d; %d beyond max(5, 2 %%) (%d of them said exact)\n",
			pa.Samples, 100*pa.EstimatedShare, pa.MaxAbs, pa.P99Abs, pa.OutOfBound, pa.OutOfBoundExact)
	}
	b := rep.BackendOpsPerVisitor
	fmt.Fprintf(w, "  backend: Tier 1 on %s, %.2f reads and %.2f writes per visitor, hottest partition %.1f %% of writes",
		b.Tier1Store, b.DynamoReads, b.DynamoWrites, 100*b.HottestPartitionWriteShare)
	if b.ImpliedEnterCapacity > 0 {
		fmt.Fprintf(w, " (enter capacity ≈ %.0f/s)", b.ImpliedEnterCapacity)
	}
	fmt.Fprintf(w, "; %.2f Redis commands in %.2f round trips per Tier 2 request\n", b.RedisCommandsPerRequest, b.RedisRoundTripsPerRequest)
	if len(b.RedisByRequest) > 0 {
		fmt.Fprintf(w, "  Redis commands (round trips) per Tier 2 request:")
		sep := " "
		for _, k := range RequestKinds {
			if c, ok := b.RedisByRequest[k]; ok {
				fmt.Fprintf(w, "%s%s %.3f (%.3f) of %d", sep, k, c.RedisCommandsPerRequest, c.RedisRoundTripsPerRequest, c.Requests)
				sep = ", "
			}
		}
		if b.RedisBackgroundCommandsPerSecond != nil {
			fmt.Fprintf(w, "; background %.1f commands/s", *b.RedisBackgroundCommandsPerSecond)
		}
		fmt.Fprintln(w)
	}
	if b.IdleCommandsPerSecond != nil && b.Idle != nil {
		fmt.Fprintf(w, "  idle: %.1f Redis commands/s over %.0f s, %d Tier 2 instances beside %d configured events (set up in %.1f s, settled in %.1f s)\n",
			*b.IdleCommandsPerSecond, b.Idle.Seconds, b.Idle.Instances, b.Idle.Events, b.Idle.PopulateSeconds, b.Idle.SettleSeconds)
	}
	if rep.RedisBytesPerWaiter != nil {
		fmt.Fprintf(w, "  Redis bytes per waiting visitor: %.0f\n", *rep.RedisBytesPerWaiter)
	}
	eps := make([]string, 0, len(rep.Errors))
	for ep := range rep.Errors {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	for _, ep := range eps {
		fmt.Fprintf(w, "  errors %s: %v\n", ep, rep.Errors[ep])
	}
	for _, f := range rep.Faults {
		rec := "never recovered"
		if f.RecoverySeconds != nil {
			rec = fmt.Sprintf("admitting again %.1f s later", *f.RecoverySeconds)
		}
		switch {
		case !f.Injected:
			rec = "not injected"
		case f.Kind == FaultJunkEvents:
			rec = "running alongside"
		}
		fmt.Fprintf(w, "  fault %s at %.1f s: %s, %d errors; %s\n", f.Kind, f.AtSeconds, rec, f.ErrorCount, f.Note)
	}
}
