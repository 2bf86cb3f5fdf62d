// check.go owns the verdict: each key's history checked by Porcupine under one time budget (a
// checker that runs out of it is a failure that says so), and for a key that is not
// linearizable the shortest failing stretch of its history, printed op by op and drawn by
// Porcupine's HTML visualization.
//
// A write of unknown outcome stays open to the end of the history, and each open one doubles
// what a refutation must search; so a key is first checked whole for a short while (a
// linearizable history is found at once), then refuted by stretches (windows of it, each sound
// on its own: see window), and only then checked whole again with the rest of the budget.
package main

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// otherValue stands for every value a stretch of history does not name: from such a state all
// of the stretch's ops behave alike, so one state covers them all.
const otherValue = "\x00other"

const (
	firstTry     = 5 * time.Second // the whole key's first check
	probeTimeout = 3 * time.Second // one stretch's check
	scanLength   = 64              // the stretches scanned for a failure: this many ops,
	scanStep     = 32              // starting this many ops apart
	scanned      = 400             // starts tried one by one when shrinking a stretch
)

// KeyVerdict is one key's check: Ok, Illegal (with its shortest failing stretch, when found)
// or Unknown (the budget ran out).
type KeyVerdict struct {
	Key     string
	Ops     int
	Unknown int // writes of unknown outcome
	// OpenUnknown: those never seen applied, open to the history's end (each doubles what a
	// refutation searches)
	OpenUnknown int
	Result      porcupine.CheckResult
	Elapsed     time.Duration
	Failing     *stretch
}

// Verdict is the whole history's: Illegal if a key is not linearizable, Unknown if the checker
// ran out of time on a key (and none is Illegal), Ok otherwise.
type Verdict struct {
	Result  porcupine.CheckResult
	Keys    []KeyVerdict
	Parts   [][]porcupine.Operation // each key's history, sorted by call
	Elapsed time.Duration
}

// CheckHistory checks every key's history (one Porcupine partition each), GOMAXPROCS at a time,
// within timeout overall.
func CheckHistory(m Mode, history []porcupine.Operation, timeout time.Duration) Verdict {
	t0 := time.Now()
	deadline := t0.Add(timeout)
	parts := partitionByKey(settleObserved(history))
	v := Verdict{Keys: make([]KeyVerdict, len(parts)), Parts: parts}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, ops := range parts {
		wg.Add(1)
		go func(i int, ops []porcupine.Operation) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			v.Keys[i] = checkKey(m, ops, deadline)
		}(i, ops)
	}
	wg.Wait()
	v.Result = porcupine.Ok
	for _, kv := range v.Keys {
		if kv.Result == porcupine.Illegal {
			v.Result = porcupine.Illegal
		} else if kv.Result == porcupine.Unknown && v.Result == porcupine.Ok {
			v.Result = porcupine.Unknown
		}
	}
	v.Elapsed = time.Since(t0)
	return v
}

func until(deadline time.Time, most time.Duration) time.Duration {
	left := time.Until(deadline)
	if left > most {
		return most
	}
	return left
}

func checkKey(m Mode, ops []porcupine.Operation, deadline time.Time) KeyVerdict {
	start := time.Now()
	kv := KeyVerdict{Key: ops[0].Input.(Input).Key, Ops: len(ops)}
	for _, op := range ops {
		if out := op.Output.(Output); out.Unknown {
			kv.Unknown++
			if !out.Seen {
				kv.OpenUnknown++
			}
		}
	}
	defer func() { kv.Elapsed = time.Since(start) }()
	whole := func(most time.Duration) porcupine.CheckResult {
		left := until(deadline, most)
		if left <= 0 {
			return porcupine.Unknown
		}
		return porcupine.CheckOperationsTimeout(NewModel(m, []string{absent}), ops, left)
	}
	first := whole(firstTry)
	if first == porcupine.Ok {
		kv.Result = first
		return kv
	}
	if s, ok := scanForFailure(m, ops, deadline); ok {
		kv.Result, kv.Failing = porcupine.Illegal, &s
		return kv
	}
	kv.Result = first
	if first == porcupine.Unknown {
		kv.Result = whole(time.Hour)
	}
	if kv.Result == porcupine.Illegal {
		if s, ok := shortestFailing(m, ops, deadline); ok {
			kv.Failing = &s
		}
	}
	return kv
}

// settleObserved bounds a write of unknown outcome that was seen to apply: a PUT whose value a
// GET later returned (or an If-Match on its ETag matched) took effect before that answer, so
// that answer's return is its return too. The others stay open to the history's end.
func settleObserved(history []porcupine.Operation) []porcupine.Operation {
	seen := map[string]int64{} // value -> the earliest return of an answer that showed it
	for _, op := range history {
		in, out := op.Input.(Input), op.Output.(Output)
		if out.Unknown {
			continue
		}
		v := ""
		if in.Kind == OpGet && out.Status == 200 {
			v = out.Value
		} else if (in.Kind == OpPutIfMatchTag || in.Kind == OpDeleteIfMatchTag) && (out.Status == 201 || out.Status == 204) {
			v = in.TagValue
		}
		if t, ok := seen[v]; v != "" && (!ok || op.Return < t) {
			seen[v] = op.Return
		}
	}
	out := make([]porcupine.Operation, len(history))
	for k, op := range history {
		in, o := op.Input.(Input), op.Output.(Output)
		if t, ok := seen[in.Value]; ok && o.Unknown && in.Kind.isPut() && t < op.Return {
			op.Return = t
			o.Seen = true
			op.Output = o
		}
		out[k] = op
	}
	return out
}

// stretch is a window of one key's history: ops[i..j] (sorted by call) as recorded, and the
// writes of other ops that overlap it in time, taken as of unknown outcome.
type stretch struct {
	i, j     int
	ops      []porcupine.Operation // Metadata: the op's index in the key's history
	overlaps int                   // how many of ops are overlapping writes
	initial  []string
	context  []porcupine.Operation // the ops just before it, for reading only
}

// window builds the stretch ops[i..j] of one key's history. Its check is sound: if the stretch
// is not linearizable from any state, neither is the history. Every op that returned before
// ops[i] was called precedes the stretch, so the state then is some state (all of them are
// tried, unless i is 0: a fresh store, absent). Every op called after the stretch's answered ops
// returned follows them. What overlaps the stretch in time may take effect inside it: such a
// write is taken as of unknown outcome (applied, or not, at any time after its call); such a
// read is dropped (it constrains nothing once dropped).
func window(ops []porcupine.Operation, i, j int) stretch {
	s := stretch{i: i, j: j}
	spanStart := ops[i].Call
	spanEnd := spanStart
	for k := i; k <= j; k++ {
		if !ops[k].Output.(Output).Unknown && ops[k].Return > spanEnd {
			spanEnd = ops[k].Return
		}
	}
	var end int64
	for _, op := range ops {
		if op.Return > end {
			end = op.Return
		}
	}
	// The states the stretch may start from: absent, a value it does not name, and a value it
	// reads or names in an If-Match that none of its own PUTs writes.
	named := map[string]bool{absent: true, otherValue: true}
	written := map[string]bool{}
	for k, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		inside := k >= i && k <= j
		if !inside {
			if op.Call > spanEnd || op.Return < spanStart || !in.Kind.isWrite() {
				continue
			}
			note := "overlaps the stretch: taken as unknown"
			if !out.Unknown {
				note += "; it answered " + describeOutput(in, out)
			}
			op.Output = Output{Unknown: true, Note: note}
			op.Return = end
			s.overlaps++
		} else if in.Kind.isPut() {
			written[in.Value] = true
		}
		op.Metadata = k
		s.ops = append(s.ops, op)
		for _, v := range []string{in.Value, in.TagValue, out.Value} {
			if v != "" {
				named[v] = true
			}
		}
	}
	if i == 0 {
		s.initial = []string{absent}
	} else {
		for v := range named {
			if !written[v] {
				s.initial = append(s.initial, v)
			}
		}
		sort.Strings(s.initial)
	}
	included := map[int]bool{}
	for _, op := range s.ops {
		included[op.Metadata.(int)] = true
	}
	for k := i - contextOps; k < i; k++ {
		if k >= 0 && !included[k] {
			op := ops[k]
			op.Metadata = k
			s.context = append(s.context, op)
		}
	}
	return s
}

func (s stretch) check(m Mode, timeout time.Duration) porcupine.CheckResult {
	if timeout <= 0 {
		return porcupine.Unknown
	}
	return porcupine.CheckOperationsTimeout(NewModel(m, s.initial), s.ops, timeout)
}

// shrink makes a failing stretch ops[i..j] short: the latest start that still fails (scanned
// one by one below j, since a stretch's overlapping writes make failing non-monotone there;
// then by binary search), then the earliest end for that start.
func shrink(m Mode, ops []porcupine.Operation, i, j int, fails func(i, j int) bool) stretch {
	start := -1
	for k := j; k >= i && k > j-scanned; k-- {
		if fails(k, j) {
			start = k
			break
		}
	}
	if start < 0 { // none of the short ones: the latest failing start below them
		lo, hi := i, j-scanned // fails(i, j)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if fails(mid, j) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		start = lo
	}
	for end := start; end < j; end++ {
		if fails(start, end) {
			j = end
			break
		}
	}
	return window(ops, start, j)
}

func failsWithin(m Mode, ops []porcupine.Operation, deadline time.Time) func(i, j int) bool {
	return func(i, j int) bool {
		return window(ops, i, j).check(m, until(deadline, probeTimeout)) == porcupine.Illegal
	}
}

// scanForFailure checks the stretches of scanLength ops, scanStep apart, and shrinks the first
// that fails. Cheap, and each is a proof on its own; it misses a failure no such stretch holds.
func scanForFailure(m Mode, ops []porcupine.Operation, deadline time.Time) (stretch, bool) {
	fails := failsWithin(m, ops, deadline)
	for i := 0; i < len(ops) && time.Now().Before(deadline); i += scanStep {
		j := i + scanLength - 1
		if j >= len(ops) {
			j = len(ops) - 1
		}
		if fails(i, j) {
			return shrink(m, ops, i, j, fails), true
		}
		if j == len(ops)-1 {
			break
		}
	}
	return stretch{}, false
}

// shortestFailing finds a short failing stretch of a key's history known not to be
// linearizable: the smallest end j for which ops[0..j] fails (a binary search: a longer prefix
// only adds constraints, nearly always), then shrinks ops[0..j]. ok is false when even the
// whole history does not fail as a stretch before the deadline.
func shortestFailing(m Mode, ops []porcupine.Operation, deadline time.Time) (stretch, bool) {
	n := len(ops)
	if window(ops, 0, n-1).check(m, time.Until(deadline)) != porcupine.Illegal {
		return stretch{}, false
	}
	fails := failsWithin(m, ops, deadline)
	lo, hi := 0, n-1 // fails(0, hi)
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(0, mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return shrink(m, ops, 0, hi, fails), true
}

func ms(t int64) string { return fmt.Sprintf("%.3f", float64(t)/1e6) }

// contextOps: how many ops before a failing stretch are printed with it, for reading only.
const contextOps = 4

func printOp(w io.Writer, op porcupine.Operation, mark string) {
	out := op.Output.(Output)
	ret := ms(op.Return)
	switch {
	case out.Seen:
		ret = "<" + ret // seen applied by then
	case out.Unknown:
		ret = "(any later)"
	}
	fmt.Fprintf(w, "  #%-5d %6d %12s %12s  %s%s\n", op.Metadata.(int), op.ClientId, ms(op.Call), ret,
		describeOp(op.Input.(Input), out), mark)
}

// ReportFailure prints a key's failing stretch and writes its visualization (and the whole
// key's, when that verbose check fits in budget) under vizDir; it returns their paths.
func ReportFailure(w io.Writer, m Mode, kv KeyVerdict, ops []porcupine.Operation, vizDir string, budget time.Duration) []string {
	var paths []string
	if kv.Failing == nil {
		fmt.Fprintf(w, "key %s: NOT LINEARIZABLE (%d ops), but no short failing stretch was found within the budget; see the visualization of the whole key\n", kv.Key, len(ops))
	} else {
		s := *kv.Failing
		fmt.Fprintf(w, "key %s: NOT LINEARIZABLE. Shortest failing stretch: ops #%d..#%d of the key's %d (by call time), %d op(s) in it",
			kv.Key, s.i, s.j, len(ops), len(s.ops)-s.overlaps)
		if s.overlaps > 0 {
			fmt.Fprintf(w, " and %d overlapping write(s) taken as of unknown outcome", s.overlaps)
		}
		if s.i == 0 {
			fmt.Fprintf(w, ", from the fresh store (key absent):\n")
		} else {
			fmt.Fprintf(w, ", from ANY state of the key:\n")
		}
		fmt.Fprintf(w, "  %6s %6s %12s %12s  %s\n", "op", "client", "call ms", "return ms", "request -> answer")
		for _, op := range s.context {
			printOp(w, op, "  [just before the stretch, not in it]")
		}
		for _, op := range s.ops {
			mark := ""
			if idx := op.Metadata.(int); idx < s.i || idx > s.j {
				mark = "  [overlapping]"
			}
			printOp(w, op, mark)
		}
		res, info := porcupine.CheckOperationsVerbose(NewModel(m, s.initial), s.ops, 10*time.Second)
		if res == porcupine.Illegal {
			fmt.Fprintf(w, "  longest linearizable order found: %s\n", longestPartial(info))
			path := filepath.Join(vizDir, fmt.Sprintf("lincheck-%s-%s-stretch.html", m, kv.Key))
			if err := porcupine.VisualizePath(NewModel(m, s.initial), info, path); err == nil {
				paths = append(paths, path)
			} else {
				fmt.Fprintf(w, "  cannot write the visualization: %v\n", err)
			}
		}
	}
	res, info := porcupine.CheckOperationsVerbose(NewModel(m, []string{absent}), ops, budget)
	if res == porcupine.Illegal {
		path := filepath.Join(vizDir, fmt.Sprintf("lincheck-%s-%s-history.html", m, kv.Key))
		if err := porcupine.VisualizePath(NewModel(m, []string{absent}), info, path); err == nil {
			paths = append(paths, path)
		}
	} else {
		fmt.Fprintf(w, "  (the whole key's visualization: its verbose check gave %s within %v; not written)\n", res, budget)
	}
	for _, p := range paths {
		fmt.Fprintf(w, "  visualization: %s\n", p)
	}
	return paths
}

// longestPartial: the longest order of the stretch's ops Porcupine could linearize, as op
// numbers; the op after it is where every order breaks.
func longestPartial(info porcupine.LinearizationInfo) string {
	var best []porcupine.Operation
	for _, part := range info.PartialLinearizationsOperations() {
		for _, lin := range part {
			if len(lin) > len(best) {
				best = lin
			}
		}
	}
	if len(best) == 0 {
		return "(none: the first op already cannot be explained)"
	}
	ids := make([]string, len(best))
	for k, op := range best {
		ids[k] = fmt.Sprintf("#%d", op.Metadata.(int))
	}
	return strings.Join(ids, " ")
}
