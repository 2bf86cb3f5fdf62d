// model.go owns the sequential specification the checker holds cache_server to: one key's state
// (a value, or absent) and what each request may answer from it, in write-through and in
// write-behind (docs/api.md, "With a store", "What a linearizability checker may assume"). It is
// a Porcupine NondeterministicModel partitioned by key, so a write of unknown outcome (its answer
// lost, or a 503 that may still take effect) is a step to either state: applied or not.
package main

import (
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/anishathalye/porcupine"
)

// OpKind is what a client asked.
type OpKind uint8

const (
	OpGet               OpKind = iota
	OpPut                      // PUT, unconditional
	OpDelete                   // DELETE, unconditional
	OpPutIfMatchAny            // PUT with If-Match: *
	OpDeleteIfMatchAny         // DELETE with If-Match: *
	OpPutIfNoneMatchAny        // PUT with If-None-Match: *
	OpPutIfMatchTag            // PUT with If-Match: "<etag>" (an ETag the client saw earlier)
	OpDeleteIfMatchTag         // DELETE with If-Match: "<etag>"
)

var opNames = [...]string{
	OpGet: "GET", OpPut: "PUT", OpDelete: "DELETE",
	OpPutIfMatchAny: "PUT If-Match:*", OpDeleteIfMatchAny: "DELETE If-Match:*",
	OpPutIfNoneMatchAny: "PUT If-None-Match:*", OpPutIfMatchTag: "PUT If-Match:etag",
	OpDeleteIfMatchTag: "DELETE If-Match:etag",
}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", int(k))
}

func (k OpKind) isWrite() bool { return k != OpGet }
func (k OpKind) isPut() bool {
	return k == OpPut || k == OpPutIfMatchAny || k == OpPutIfNoneMatchAny || k == OpPutIfMatchTag
}

// Input is one request: its key, its kind, the value a PUT writes (unique in a run), and for
// If-Match: "<etag>" the ETag and the value it came with (the GET or PUT answer that carried it).
type Input struct {
	Key      string
	Kind     OpKind
	Value    string
	Tag      string
	TagValue string
}

// Output is what the client learnt: the status, a GET's value, or that the outcome is unknown
// (Unknown: the answer was lost, or a 503 whose write may still take effect). NotApplied is a
// 503 the contract says changed nothing. Seen: an unknown PUT whose value was read later (its
// return is that read's: it applied by then). Note keeps a 503's reason for the report.
type Output struct {
	Status     int
	Value      string
	Unknown    bool
	NotApplied bool
	Seen       bool
	Note       string
}

// absent is the state of a key that holds no value; PUT values are never empty.
const absent = ""

// Mode is the server's --write-mode.
type Mode int

const (
	ModeThrough Mode = iota
	ModeBehind
)

func (m Mode) String() string {
	if m == ModeBehind {
		return "behind"
	}
	return "through"
}

func parseMode(s string) (Mode, error) {
	switch s {
	case "through":
		return ModeThrough, nil
	case "behind":
		return ModeBehind, nil
	}
	return 0, fmt.Errorf("--mode must be through or behind, not %q", s)
}

// effect is what the write in does to state if it applies: whether its condition lets it
// apply there, and the state after. An unconditional DELETE of an absent key "applies" too
// (it leaves the key absent).
func effect(state string, in Input) (bool, string) {
	switch in.Kind {
	case OpPut:
		return true, in.Value
	case OpDelete:
		return true, absent
	case OpPutIfMatchAny:
		return state != absent, in.Value
	case OpDeleteIfMatchAny:
		return state != absent, absent
	case OpPutIfNoneMatchAny:
		return state == absent, in.Value
	case OpPutIfMatchTag:
		return state != absent && state == in.TagValue, in.Value
	case OpDeleteIfMatchTag:
		return state != absent && state == in.TagValue, absent
	}
	return false, state
}

// putStatusFits: may a PUT that applied to state answer status? Write-through's 201/204 is
// exact (201: the key was in neither the cache nor the store). Write-behind's says whether the
// key was in the cache or the dirty buffer, which a linearizability checker cannot see: either.
func (m Mode) putStatusFits(state string, status int) bool {
	if status != 201 && status != 204 {
		return false
	}
	if m == ModeBehind {
		return true
	}
	return (status == 201) == (state == absent)
}

// Step returns every state the key may be in after op (in, out) from state; none when the
// answer is impossible there.
func (m Mode) Step(state string, in Input, out Output) []string {
	if out.NotApplied {
		return []string{state}
	}
	if out.Unknown {
		if in.Kind == OpGet {
			return []string{state} // the client drops these; harmless if one is recorded
		}
		if ok, next := effect(state, in); ok && next != state {
			return []string{state, next}
		}
		return []string{state}
	}
	switch in.Kind {
	case OpGet:
		switch out.Status {
		case 200:
			if state != absent && state == out.Value {
				return []string{state}
			}
		case 404:
			if state == absent {
				return []string{state}
			}
		}
		return nil
	case OpDelete:
		switch out.Status {
		case 204:
			if state != absent {
				return []string{absent}
			}
		case 404:
			if state == absent {
				return []string{absent}
			}
		}
		return nil
	}
	// The conditional writes and the unconditional PUT.
	ok, next := effect(state, in)
	switch out.Status {
	case 201, 204:
		if !ok {
			return nil
		}
		if in.Kind.isPut() {
			if m.putStatusFits(state, out.Status) {
				return []string{next}
			}
			return nil
		}
		if out.Status == 204 { // a conditional DELETE that applied
			return []string{next}
		}
		return nil
	case 412:
		switch in.Kind {
		case OpPutIfMatchAny, OpDeleteIfMatchAny:
			if state == absent {
				return []string{state}
			}
		case OpPutIfNoneMatchAny:
			if state != absent {
				return []string{state}
			}
		case OpPutIfMatchTag, OpDeleteIfMatchTag:
			// Always allowed: an ETag names a cached item's version, and a key not cached (a
			// reset, an eviction, a restart since) answers 412 whatever its value.
			return []string{state}
		}
		return nil
	}
	return nil
}

func hashState(state interface{}) uint64 {
	h := fnv.New64a()
	h.Write([]byte(state.(string)))
	return h.Sum64()
}

// partitionByKey splits a history into one per key, each sorted by call time.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	var keys []string
	for _, op := range history {
		k := op.Input.(Input).Key
		if _, seen := byKey[k]; !seen {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		ops := byKey[k]
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
		out = append(out, ops)
	}
	return out
}

// NewModel is the Porcupine model of mode, from the initial states given (a fresh store: only
// absent).
func NewModel(m Mode, initial []string) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByKey,
		Init: func() []interface{} {
			states := make([]interface{}, len(initial))
			for i, s := range initial {
				states[i] = s
			}
			return states
		},
		Step: func(state, input, output interface{}) []interface{} {
			next := m.Step(state.(string), input.(Input), output.(Output))
			states := make([]interface{}, len(next))
			for i, s := range next {
				states[i] = s
			}
			return states
		},
		Hash:              hashState,
		DescribeOperation: func(input, output interface{}) string { return describeOp(input.(Input), output.(Output)) },
		DescribeState:     func(state interface{}) string { return describeState(state.(string)) },
	}
	return nm.ToModel()
}

func describeState(s string) string {
	switch s {
	case absent:
		return "absent"
	case otherValue:
		return "(a value not named here)"
	}
	return s
}

func describeOp(in Input, out Output) string {
	req := in.Kind.String()
	if in.Kind == OpPutIfMatchTag || in.Kind == OpDeleteIfMatchTag {
		req = fmt.Sprintf("%s(%s, seen with %s)", req, in.Tag, in.TagValue)
	}
	if in.Kind.isPut() {
		req += " " + in.Value
	}
	return req + " -> " + describeOutput(in, out)
}

func describeOutput(in Input, out Output) string {
	switch {
	case out.Unknown && out.Note != "":
		return "unknown outcome (" + out.Note + ")"
	case out.Unknown:
		return "unknown outcome"
	case out.NotApplied:
		return fmt.Sprintf("%d not applied (%s)", out.Status, out.Note)
	case in.Kind == OpGet && out.Status == 200:
		return "200 " + out.Value
	}
	return fmt.Sprint(out.Status)
}
