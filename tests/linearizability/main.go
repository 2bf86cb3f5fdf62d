// lincheck: a black-box linearizability test of cache_server's key routes with a store. It runs
// concurrent keep-alive clients against --addr until --ops operations are done (or --duration
// passes), records the history, and checks it with Porcupine against the model of model.go
// (--mode through|behind). The server may be restarted under it (tests/linearizability drives
// kill -9 and SIGTERM restarts); a write whose answer is lost is of unknown outcome.
//
// Exit status: 0 linearizable; 1 not linearizable (the shortest failing stretch is printed and
// visualized); 2 a usage error or a load that could not run (the time bound hit before the op
// target, an answer outside the contract); 3 the checker ran out of time (no verdict).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/anishathalye/porcupine"
)

type options struct {
	addr        string
	mode        string
	keys        int
	clients     int
	ops         int64
	minOps      int64
	duration    time.Duration
	resetEvery  time.Duration
	checkBudget time.Duration
	vizDir      string
	historyOut  string
	seed        int64
	keyPrefix   string
	rate        float64
}

func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("lincheck", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "", "the server, 127.0.0.1:PORT (required)")
	fs.StringVar(&o.mode, "mode", "through", "the server's --write-mode: through or behind")
	fs.IntVar(&o.keys, "keys", 16, "keys, 1..1000")
	fs.IntVar(&o.clients, "clients", 16, "concurrent clients (one connection each), 1..256")
	fs.Int64Var(&o.ops, "ops", 100000, "operations to run (answered, or of unknown outcome)")
	fs.Int64Var(&o.minOps, "min-ops", 0, "if --duration passes first, succeed with at least this many (0: --ops is required)")
	fs.DurationVar(&o.duration, "duration", 120*time.Second, "the load's time bound, up to 1h")
	fs.DurationVar(&o.resetEvery, "cache-reset-every", 0, "POST /reset?scope=cache this often during the load (0: never)")
	fs.DurationVar(&o.checkBudget, "check-timeout", 60*time.Second, "the checker's time bound (running out of it is a failure)")
	fs.StringVar(&o.vizDir, "viz-dir", os.TempDir(), "where a failure's HTML visualizations are written")
	fs.StringVar(&o.historyOut, "history-out", "", "write the history here, one JSON op a line (times in ns since the start)")
	fs.Int64Var(&o.seed, "seed", 0, "the clients' random seed (0: from the clock; printed)")
	fs.Float64Var(&o.rate, "rate", 0, "operations per second over all clients (0: as fast as the server answers)")
	fs.StringVar(&o.keyPrefix, "key-prefix", "lin", "the keys' names: PREFIX0 .. PREFIX<keys-1>; they must be absent at the start")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() != 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.addr == "":
		return o, errors.New("--addr is required (127.0.0.1:PORT)")
	case o.keys < 1 || o.keys > 1000:
		return o, errors.New("--keys must be 1..1000")
	case o.clients < 1 || o.clients > 256:
		return o, errors.New("--clients must be 1..256")
	case o.ops < 1 || o.ops > 10000000:
		return o, errors.New("--ops must be 1..10000000")
	case o.minOps < 0 || o.minOps > o.ops:
		return o, errors.New("--min-ops must be 0..--ops")
	case o.duration <= 0 || o.duration > time.Hour:
		return o, errors.New("--duration must be more than 0 and at most 1h")
	case o.resetEvery < 0 || (o.resetEvery > 0 && o.resetEvery < time.Millisecond):
		return o, errors.New("--cache-reset-every must be 0 or at least 1ms")
	case o.checkBudget <= 0 || o.checkBudget > time.Hour:
		return o, errors.New("--check-timeout must be more than 0 and at most 1h")
	case o.rate < 0 || o.rate > 1e7:
		return o, errors.New("--rate must be 0..10000000")
	case o.keyPrefix == "" || strings.ContainsAny(o.keyPrefix, "/?%# \r\n"):
		return o, errors.New("--key-prefix must be non-empty, without / ? % # or spaces")
	}
	if _, err := parseMode(o.mode); err != nil {
		return o, err
	}
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return o, fmt.Errorf("--addr %q: %v", o.addr, err)
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	return o, nil
}

// monotonicNs reads CLOCK_MONOTONIC (the clock Go's time.Since and Python's time.monotonic
// use), so a driver can place its restarts on the history's time axis.
func monotonicNs() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// Summary is the last line of output, `lincheck-summary {json}`, for the driver.
type Summary struct {
	Mode          string   `json:"mode"`
	Result        string   `json:"result"`
	Ops           int64    `json:"ops"`
	Recorded      int      `json:"recorded"`
	Unknown       int64    `json:"unknown"`
	OpenUnknown   int      `json:"open_unknown"`
	LostReads     int64    `json:"lost_reads"`
	NotSent       int64    `json:"not_sent"`
	NotApplied    int64    `json:"not_applied_503"`
	Status503     int64    `json:"status_503"`
	Resets        int64    `json:"resets"`
	ResetErrors   int64    `json:"reset_errors"`
	Reconnects    int64    `json:"reconnects"`
	LoadSeconds   float64  `json:"load_s"`
	CheckSeconds  float64  `json:"check_s"`
	Seed          int64    `json:"seed"`
	Texts503      []string `json:"texts_503,omitempty"`
	FailingKeys   []string `json:"failing_keys,omitempty"`
	Visualization []string `json:"visualizations,omitempty"`
	Error         string   `json:"error,omitempty"`
}

// writeHistory writes one op a line: client, call and return (ns), input and output.
func writeHistory(path string, history []porcupine.Operation) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, op := range history {
		enc.Encode(struct {
			Client int    `json:"client"`
			Call   int64  `json:"call"`
			Return int64  `json:"return"`
			In     Input  `json:"in"`
			Out    Output `json:"out"`
		}{op.ClientId, op.Call, op.Return, op.Input.(Input), op.Output.(Output)})
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func emit(s Summary) {
	b, _ := json.Marshal(s)
	fmt.Printf("lincheck-summary %s\n", b)
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	o, err := parseOptions(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "lincheck: %v\n", err)
		return 2
	}
	mode, _ := parseMode(o.mode)
	sum := Summary{Mode: o.mode, Seed: o.seed}
	origin := monotonicNs()
	l := &Load{addr: o.addr, keys: o.keys, clients: o.clients, mode: mode, seed: o.seed,
		keyPrefix: o.keyPrefix, rate: o.rate, start: time.Now()}
	fmt.Printf("lincheck: origin CLOCK_MONOTONIC %d ns; %s, %d clients, %d keys, %d ops within %v, seed %d\n",
		origin, o.addr, o.clients, o.keys, o.ops, o.duration, o.seed)
	if err := l.checkKeysAbsent(10 * time.Second); err != nil {
		sum.Result, sum.Error = "error", err.Error()
		fmt.Fprintf(os.Stderr, "lincheck: %v\n", err)
		emit(sum)
		return 2
	}
	history, met := l.Run(o.ops, o.duration, o.resetEvery)
	loadTime := time.Since(l.start)
	c := &l.counters
	sum.Ops, sum.Recorded, sum.Unknown = c.Done.Load(), len(history), c.Unknown.Load()
	sum.LostReads, sum.NotSent, sum.NotApplied = c.LostReads.Load(), c.NotSent.Load(), c.NotApplied.Load()
	sum.Status503, sum.Resets, sum.ResetErrors = c.Status503.Load(), c.Resets.Load(), c.ResetErrors.Load()
	sum.Reconnects, sum.LoadSeconds = c.Reconnects.Load(), loadTime.Seconds()
	sum.Texts503 = l.texts503
	fmt.Printf("lincheck: load done: %d ops (%d recorded, %d of unknown outcome, %d lost reads dropped, %d not sent, %d 503s of which %d not applied), %d cache resets (%d failed) in %.1f s\n",
		sum.Ops, sum.Recorded, sum.Unknown, sum.LostReads, sum.NotSent, sum.Status503, sum.NotApplied,
		sum.Resets, sum.ResetErrors, loadTime.Seconds())
	os.Stdout.Sync()
	if l.fatalErr != nil {
		sum.Result, sum.Error = "error", l.fatalErr.Error()
		fmt.Fprintf(os.Stderr, "lincheck: %v\n", l.fatalErr)
		emit(sum)
		return 2
	}
	if !met && (o.minOps == 0 || sum.Ops < o.minOps) {
		need := o.ops
		if o.minOps > 0 {
			need = o.minOps
		}
		sum.Result = "error"
		sum.Error = fmt.Sprintf("the time bound (--duration %v) passed after %d of the %d operations needed", o.duration, sum.Ops, need)
		fmt.Fprintf(os.Stderr, "lincheck: %s\n", sum.Error)
		emit(sum)
		return 2
	}
	if o.historyOut != "" {
		if err := writeHistory(o.historyOut, history); err != nil {
			fmt.Fprintf(os.Stderr, "lincheck: --history-out: %v\n", err)
		}
	}
	verdict := CheckHistory(mode, history, o.checkBudget)
	sum.CheckSeconds = verdict.Elapsed.Seconds()
	for _, kv := range verdict.Keys {
		sum.OpenUnknown += kv.OpenUnknown
	}
	mostOpen := 0
	for _, kv := range verdict.Keys {
		if kv.OpenUnknown > mostOpen {
			mostOpen = kv.OpenUnknown
		}
	}
	fmt.Printf("lincheck: check %s in %.2f s (%d keys; %d writes of unknown outcome never seen applied, at most %d on one key)\n",
		verdict.Result, verdict.Elapsed.Seconds(), len(verdict.Keys), sum.OpenUnknown, mostOpen)
	switch verdict.Result {
	case porcupine.Ok:
		sum.Result = "ok"
		emit(sum)
		return 0
	case porcupine.Unknown:
		var slow []string
		for _, kv := range verdict.Keys {
			if kv.Result == porcupine.Unknown {
				slow = append(slow, fmt.Sprintf("%s (%d ops, %d unknown)", kv.Key, kv.Ops, kv.Unknown))
			}
		}
		sum.Result = "checker-timeout"
		sum.Error = fmt.Sprintf("the checker ran out of its %v (--check-timeout) on %s: no verdict", o.checkBudget, strings.Join(slow, ", "))
		fmt.Fprintf(os.Stderr, "lincheck: %s\n", sum.Error)
		emit(sum)
		return 3
	}
	sum.Result = "not-linearizable"
	for k, kv := range verdict.Keys {
		if kv.Result != porcupine.Illegal {
			continue
		}
		sum.FailingKeys = append(sum.FailingKeys, kv.Key)
		if len(sum.FailingKeys) <= 2 { // the first two failing keys are enough to read
			sum.Visualization = append(sum.Visualization,
				ReportFailure(os.Stdout, mode, kv, verdict.Parts[k], o.vizDir, 10*time.Second)...)
		}
	}
	sum.Error = fmt.Sprintf("not linearizable: keys %s", strings.Join(sum.FailingKeys, ", "))
	emit(sum)
	return 1
}
