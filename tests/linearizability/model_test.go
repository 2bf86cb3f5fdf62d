// model_test.go: the model and the checker on hand-written histories (ones that must be accepted
// and ones that must be rejected: a stale read after an acknowledged DELETE, a PUT's 201 over a
// key that exists, ...), and on histories simulated from a linearizable key (every stretch of
// them must pass, and one stale read planted in them must be found in a short stretch).
package main

import (
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// h builds a one-key history from ops written as (call, return, input, output); a return of
// -1 is an unknown outcome (the history's end).
type hop struct {
	call, ret int64
	in        Input
	out       Output
}

func history(ops ...hop) []porcupine.Operation {
	var hist []porcupine.Operation
	for i, o := range ops {
		o.in.Key = "k"
		ret := o.ret
		if ret < 0 {
			o.out.Unknown = true
			ret = unknownReturn
		}
		hist = append(hist, porcupine.Operation{ClientId: i, Input: o.in, Output: o.out, Call: o.call, Return: ret})
	}
	return finish(hist)
}

func get(call, ret int64, status int, value string) hop {
	return hop{call, ret, Input{Kind: OpGet}, Output{Status: status, Value: value}}
}
func put(call, ret int64, value string, status int) hop {
	return hop{call, ret, Input{Kind: OpPut, Value: value}, Output{Status: status}}
}
func del(call, ret int64, status int) hop {
	return hop{call, ret, Input{Kind: OpDelete}, Output{Status: status}}
}
func cond(call, ret int64, kind OpKind, value string, status int) hop {
	return hop{call, ret, Input{Kind: kind, Value: value}, Output{Status: status}}
}
func tagged(call, ret int64, kind OpKind, value, tagValue string, status int) hop {
	return hop{call, ret, Input{Kind: kind, Value: value, Tag: `"t-` + tagValue + `"`, TagValue: tagValue}, Output{Status: status}}
}

func check(m Mode, hist []porcupine.Operation) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(NewModel(m, []string{absent}), hist, 10*time.Second)
}

func TestModelCases(t *testing.T) {
	both := []Mode{ModeThrough, ModeBehind}
	cases := []struct {
		name  string
		modes []Mode
		want  porcupine.CheckResult
		ops   []hop
	}{
		{"sequential put get delete", both, porcupine.Ok, []hop{
			put(0, 10, "a", 201), get(20, 30, 200, "a"), put(40, 50, "b", 204), get(60, 70, 200, "b"),
			del(80, 90, 204), get(100, 110, 404, ""), del(120, 130, 404)}},
		{"stale read after an acknowledged delete", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), del(20, 30, 204), get(40, 50, 200, "a")}},
		{"stale read after an acknowledged put", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), put(20, 30, "b", 204), get(40, 50, 200, "a")}},
		{"a value going backwards between two reads", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), put(5, 100, "b", 204), get(20, 30, 200, "b"), get(40, 50, 200, "a")}},
		{"reads concurrent with a put see old then new", both, porcupine.Ok, []hop{
			put(0, 100, "a", 201), get(10, 20, 404, ""), get(30, 40, 200, "a"), get(50, 60, 200, "a")}},
		{"a read of a value never written", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), get(20, 30, 200, "zz")}},
		{"a read of absent while a value is there", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), get(20, 30, 404, "")}},
		{"write-through: 201 for a key that exists", []Mode{ModeThrough}, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), put(20, 30, "b", 201)}},
		{"write-through: 204 for a key that is absent", []Mode{ModeThrough}, porcupine.Illegal, []hop{
			put(0, 10, "a", 204)}},
		{"write-behind: 201 and 204 are not exact", []Mode{ModeBehind}, porcupine.Ok, []hop{
			put(0, 10, "a", 204), put(20, 30, "b", 201), get(40, 50, 200, "b")}},
		{"delete 404 while a value is there", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), del(20, 30, 404)}},
		{"delete 204 of an absent key", both, porcupine.Illegal, []hop{
			del(0, 10, 204)}},
		{"unknown put applied late", both, porcupine.Ok, []hop{
			put(0, -1, "a", 0), get(10, 20, 404, ""), get(30, 40, 200, "a")}},
		{"unknown put never applied", both, porcupine.Ok, []hop{
			put(0, -1, "a", 0), get(10, 20, 404, ""), put(30, 40, "b", 201), get(50, 60, 200, "b")}},
		{"unknown put applies once: seen, then gone without a delete", both, porcupine.Illegal, []hop{
			put(0, -1, "a", 0), get(10, 20, 200, "a"), get(30, 40, 404, "")}},
		{"unknown put applied after a later acknowledged put", both, porcupine.Ok, []hop{
			put(0, -1, "a", 0), put(10, 20, "b", 201), get(30, 40, 200, "a")}},
		{"unknown delete: a deleted value does not come back", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), del(20, -1, 0), get(30, 40, 404, ""), get(50, 60, 200, "a")}},
		{"not-applied 503 changes nothing", both, porcupine.Illegal, []hop{
			{0, 10, Input{Kind: OpPut, Value: "a"}, Output{Status: 503, NotApplied: true}}, get(20, 30, 200, "a")}},
		{"If-Match * on absent: 412", both, porcupine.Ok, []hop{
			cond(0, 10, OpPutIfMatchAny, "a", 412), cond(20, 30, OpDeleteIfMatchAny, "", 412), get(40, 50, 404, "")}},
		{"If-Match * PUT applies to an absent key", both, porcupine.Illegal, []hop{
			cond(0, 10, OpPutIfMatchAny, "a", 204)}},
		{"If-Match * DELETE answers 412 while a value is there", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), cond(20, 30, OpDeleteIfMatchAny, "", 412)}},
		{"If-Match * on a present key applies", both, porcupine.Ok, []hop{
			put(0, 10, "a", 201), cond(20, 30, OpPutIfMatchAny, "b", 204), get(40, 50, 200, "b"),
			cond(60, 70, OpDeleteIfMatchAny, "", 204), get(80, 90, 404, "")}},
		{"write-through: If-Match * PUT answers 201", []Mode{ModeThrough}, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), cond(20, 30, OpPutIfMatchAny, "b", 201)}},
		{"If-None-Match * creates only", both, porcupine.Ok, []hop{
			cond(0, 10, OpPutIfNoneMatchAny, "a", 201), cond(20, 30, OpPutIfNoneMatchAny, "b", 412), get(40, 50, 200, "a")}},
		{"If-None-Match * PUT over a present key", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), cond(20, 30, OpPutIfNoneMatchAny, "b", 201)}},
		{"If-None-Match * 412 on an absent key", both, porcupine.Illegal, []hop{
			cond(0, 10, OpPutIfNoneMatchAny, "b", 412)}},
		{"If-Match etag applies while the value is the one it came with", both, porcupine.Ok, []hop{
			put(0, 10, "a", 201), get(20, 30, 200, "a"), tagged(40, 50, OpPutIfMatchTag, "b", "a", 204),
			tagged(60, 70, OpDeleteIfMatchTag, "", "b", 204), get(80, 90, 404, "")}},
		{"If-Match etag applies over a newer value", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), get(20, 30, 200, "a"), put(40, 50, "b", 204), tagged(60, 70, OpPutIfMatchTag, "c", "a", 204)}},
		{"If-Match etag delete applies after the key was deleted", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), del(20, 30, 204), tagged(40, 50, OpDeleteIfMatchTag, "", "a", 204)}},
		{"If-Match etag may always answer 412", both, porcupine.Ok, []hop{
			put(0, 10, "a", 201), tagged(20, 30, OpPutIfMatchTag, "b", "a", 412), get(40, 50, 200, "a")}},
		{"unknown conditional put applies only where its condition holds", both, porcupine.Illegal, []hop{
			put(0, 10, "a", 201), cond(20, -1, OpPutIfNoneMatchAny, "b", 0), get(30, 40, 200, "a"), get(50, 60, 200, "b")}},
	}
	for _, c := range cases {
		for _, m := range c.modes {
			t.Run(fmt.Sprintf("%s/%s", m, c.name), func(t *testing.T) {
				if got := check(m, history(c.ops...)); got != c.want {
					t.Fatalf("got %s, want %s", got, c.want)
				}
			})
		}
	}
}

// simulate is a history of one key from a linearizable server: each op takes effect at a
// random instant of its interval, in that order; some writes lose their answer (unknown
// outcome, applied or not; their return is left at unknownReturn, for finish).
func simulate(m Mode, r *rand.Rand, n int) []porcupine.Operation {
	return finish(simulateRaw(m, r, n))
}

// unknownOneIn: one write in this many loses its answer (a kill -9 every 3 s loses about one in
// 800 of a real run's; more here, so that the stretches meet them). Each one left open to the
// end doubles what a refutation searches: at one in 30 a 400-op history takes the checker
// minutes to refute.
const unknownOneIn = 150

func simulateRaw(m Mode, r *rand.Rand, n int) []porcupine.Operation {
	type timed struct {
		op porcupine.Operation
		at int64
	}
	var ops []timed
	clock := int64(0)
	for i := 0; i < n; i++ {
		clock += int64(r.Intn(40))
		dur := int64(1 + r.Intn(100))
		in := Input{Key: "k", Kind: pickKind(r)}
		if in.Kind.isPut() {
			in.Value = fmt.Sprintf("v%d", i)
		}
		ops = append(ops, timed{porcupine.Operation{ClientId: i % 8, Input: in, Call: clock, Return: clock + dur}, clock + int64(r.Intn(int(dur)+1))})
	}
	sort.Slice(ops, func(a, b int) bool { return ops[a].at < ops[b].at })
	state, lastValue := absent, ""
	for k := range ops {
		op := &ops[k].op
		in := op.Input.(Input)
		if in.Kind == OpPutIfMatchTag || in.Kind == OpDeleteIfMatchTag {
			in.TagValue, in.Tag = lastValue, `"t"`
			if lastValue == "" || r.Intn(3) == 0 {
				in.TagValue = "v-none"
			}
			op.Input = in
		}
		if in.Kind.isWrite() && r.Intn(unknownOneIn) == 0 {
			op.Output, op.Return = Output{Unknown: true}, unknownReturn
			if r.Intn(2) == 0 {
				if ok, next := effect(state, in); ok {
					state = next
				}
			}
			continue
		}
		var out Output
		ok, next := effect(state, in)
		switch in.Kind {
		case OpGet:
			out.Status = 404
			if state != absent {
				out.Status, out.Value, lastValue = 200, state, state
			}
		case OpDelete:
			out.Status = 404
			if state != absent {
				out.Status = 204
			}
			state = absent
		default:
			switch {
			case !ok:
				out.Status = 412
			case !in.Kind.isPut():
				out.Status = 204
			case m == ModeBehind && r.Intn(2) == 0:
				out.Status = 201 + 3*r.Intn(2)
			case state == absent:
				out.Status = 201
			default:
				out.Status = 204
			}
			if ok {
				state = next
			}
		}
		op.Output = out
	}
	hist := make([]porcupine.Operation, len(ops))
	for k := range ops {
		hist[k] = ops[k].op
	}
	return hist
}

func TestSimulatedHistoriesPass(t *testing.T) {
	for _, m := range []Mode{ModeThrough, ModeBehind} {
		for seed := int64(1); seed <= 20; seed++ {
			hist := simulate(m, rand.New(rand.NewSource(seed)), 300)
			v := CheckHistory(m, hist, 20*time.Second)
			parts := v.Parts
			if v.Result != porcupine.Ok {
				t.Fatalf("%s seed %d: a linearizable history checked %s", m, seed, v.Result)
			}
			ops := parts[0]
			// Every stretch (all starts, a few lengths) of a linearizable history passes: the
			// stretches are sound.
			for i := 0; i < len(ops); i++ {
				for _, length := range []int{1, 2, 5, 20} {
					if j := i + length - 1; j < len(ops) {
						if res := window(ops, i, j).check(m, 5*time.Second); res == porcupine.Illegal {
							t.Fatalf("%s seed %d: stretch %d..%d of a linearizable history failed", m, seed, i, j)
						}
					}
				}
			}
		}
	}
}

func TestPlantedStaleReadIsFoundInAShortStretch(t *testing.T) {
	for _, m := range []Mode{ModeThrough, ModeBehind} {
		for seed := int64(1); seed <= 10; seed++ {
			r := rand.New(rand.NewSource(seed))
			hist := simulateRaw(m, r, 400)
			// A GET after an acknowledged DELETE that returns the value before it.
			end := hist[0].Call
			for _, op := range hist {
				if op.Return > end && !op.Output.(Output).Unknown {
					end = op.Return
				}
			}
			hist = append(hist,
				porcupine.Operation{ClientId: 90, Input: Input{Key: "k", Kind: OpPut, Value: "old"}, Call: end + 10, Return: end + 20, Output: Output{Status: 201 + 3*r.Intn(2)}},
				porcupine.Operation{ClientId: 91, Input: Input{Key: "k", Kind: OpDelete}, Call: end + 30, Return: end + 40, Output: Output{Status: 204}},
				porcupine.Operation{ClientId: 92, Input: Input{Key: "k", Kind: OpGet}, Call: end + 50, Return: end + 60, Output: Output{Status: 200, Value: "old"}})
			if m == ModeThrough {
				// write-through's 201/204 is exact: the planted PUT's status must fit, so let
				// the checker decide it from the prefix (either may be the one that fits).
				hist[len(hist)-3].Output = Output{Status: 204}
				if check(m, finish(append([]porcupine.Operation(nil), hist[:len(hist)-1]...))) != porcupine.Ok {
					hist[len(hist)-3].Output = Output{Status: 201}
				}
			}
			hist = finish(hist)
			v := CheckHistory(m, hist, 20*time.Second)
			if v.Result != porcupine.Illegal {
				t.Fatalf("%s seed %d: the planted stale read checked %s", m, seed, v.Result)
			}
			if v.Keys[0].Failing == nil {
				t.Fatalf("%s seed %d: no failing stretch found", m, seed)
			}
			s := *v.Keys[0].Failing
			foundGet := false
			for _, op := range s.ops {
				if op.ClientId == 92 {
					foundGet = true
				}
			}
			if !foundGet || s.j-s.i+1 > 3 {
				var b strings.Builder
				ReportFailure(&b, m, v.Keys[0], v.Parts[0], t.TempDir(), 5*time.Second)
				t.Fatalf("%s seed %d: the stretch %d..%d does not isolate the stale read:\n%s", m, seed, s.i, s.j, b.String())
			}
		}
	}
}

func TestReportFailureWritesAVisualization(t *testing.T) {
	hist := history(put(0, 10, "a", 201), get(15, 18, 200, "a"), del(20, 30, 204), get(40, 50, 200, "a"))
	dir := t.TempDir()
	v := CheckHistory(ModeThrough, hist, 10*time.Second)
	paths := ReportFailure(io.Discard, ModeThrough, v.Keys[0], v.Parts[0], dir, 10*time.Second)
	if len(paths) == 0 || !strings.HasPrefix(paths[0], dir) {
		t.Fatalf("no visualization written: %v", paths)
	}
}

func TestParseOptions(t *testing.T) {
	for _, args := range [][]string{
		{}, {"--addr", "127.0.0.1:1", "--mode", "sideways"}, {"--addr", "127.0.0.1:1", "--keys", "0"},
		{"--addr", "127.0.0.1:1", "--min-ops", "5", "--ops", "4"}, {"--addr", "nope"},
		{"--addr", "127.0.0.1:1", "extra"}, {"--addr", "127.0.0.1:1", "--duration", "0s"},
	} {
		if _, err := parseOptions(args); err == nil {
			t.Errorf("%q: accepted", args)
		}
	}
	if _, err := parseOptions([]string{"--addr", "127.0.0.1:1", "--mode", "behind"}); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}
