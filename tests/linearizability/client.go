// client.go owns the load: N clients, each one keep-alive HTTP/1.1 connection with one request
// outstanding, sending a mix of plain and conditional GET/PUT/DELETE on K keys and recording each
// request's call and return times (the monotonic clock), input and output. It decides what an
// answer means for the history: a request never sent (connection refused) is not recorded; one
// whose answer was lost, or a 503 that may still take effect, is a write of unknown outcome
// (a GET whose answer is lost is dropped: it changed nothing).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

const (
	requestTimeout   = 10 * time.Second // past --store-timeout (2 s) and a restart: the answer is lost
	dialTimeout      = 2 * time.Second
	refusedRetry     = 20 * time.Millisecond // the server is restarting: try again after this
	maxResponseBytes = 1 << 20
)

// opWeights is the mix, in the order of OpKind (sum 100).
var opWeights = [...]int{
	OpGet: 45, OpPut: 18, OpDelete: 9, OpPutIfMatchAny: 5, OpDeleteIfMatchAny: 4,
	OpPutIfNoneMatchAny: 7, OpPutIfMatchTag: 8, OpDeleteIfMatchTag: 4,
}

// taggedValue is an ETag a client saw and the value it came with.
type taggedValue struct{ tag, value string }

// Counters are the load's totals (atomic: every client adds to them).
type Counters struct {
	Done        atomic.Int64 // operations answered or of unknown outcome: what --ops counts
	Unknown     atomic.Int64 // writes of unknown outcome
	LostReads   atomic.Int64 // GETs whose answer was lost (dropped)
	NotSent     atomic.Int64 // connection refused or failed to connect: retried
	NotApplied  atomic.Int64 // 503s the contract says changed nothing
	Status503   atomic.Int64
	Resets      atomic.Int64 // POST /reset?scope=cache answered 204
	ResetErrors atomic.Int64
	Reconnects  atomic.Int64
}

// errNotSent: nothing of the request reached the server (the connect failed).
var errNotSent = errors.New("not sent")

// conn is one keep-alive connection to the server.
type conn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
}

func (cn *conn) close() {
	if cn.c != nil {
		cn.c.Close()
		cn.c, cn.br = nil, nil
	}
}

// usable: the kept-alive connection has not been closed by the server meanwhile (a restart, an
// idle close): peeking with a deadline already past times out on a live idle connection.
func (cn *conn) usable() bool {
	if cn.c == nil {
		return false
	}
	cn.c.SetReadDeadline(time.Now())
	_, err := cn.br.Peek(1)
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// roundTrip sends raw and reads one response. errNotSent when no connection could be made;
// any other error after the request may have been sent.
func (cn *conn) roundTrip(raw []byte, counters *Counters) (*http.Response, []byte, error) {
	if !cn.usable() {
		cn.close()
		c, err := net.DialTimeout("tcp", cn.addr, dialTimeout)
		if err != nil {
			return nil, nil, errNotSent
		}
		counters.Reconnects.Add(1)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		cn.c, cn.br = c, bufio.NewReaderSize(c, 16<<10)
	}
	cn.c.SetDeadline(time.Now().Add(requestTimeout))
	if _, err := cn.c.Write(raw); err != nil {
		cn.close()
		return nil, nil, fmt.Errorf("write: %w", err)
	}
	resp, err := http.ReadResponse(cn.br, nil)
	if err != nil {
		cn.close()
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	resp.Body.Close()
	if err != nil {
		cn.close()
		return nil, nil, fmt.Errorf("read body: %w", err)
	}
	if resp.Close {
		cn.close()
	}
	return resp, body, nil
}

// notAppliedTexts are the 503 reasons docs/api.md says changed nothing ("What a linearizability
// checker may assume"): write-behind's timeout ("the write was not applied") and failing store,
// a full queue or backlog, and a conditional write that could not be decided (answered before
// any write of it was submitted: server/store_tier.cc, decide_locked).
var notAppliedTexts = []string{
	"the write was not applied",
	"the store is failing",
	"write queue full",
	"store backlog full",
	"store read backlog full",
	"the key's state is unknown",
	"a reset is pending",
	"the key kept changing while a conditional write looked it up",
	"the key kept changing while a DELETE looked it up",
	"a write of this key waits for room in the dirty buffer",
}

func notApplied503(body []byte) bool {
	for _, t := range notAppliedTexts {
		if bytes.Contains(body, []byte(t)) {
			return true
		}
	}
	return false
}

// Load is the run: its clients share the history and the counters.
type Load struct {
	addr      string
	keys      int
	clients   int
	mode      Mode
	seed      int64
	keyPrefix string
	rate      float64 // operations per second over all clients; 0: as fast as answered
	start     time.Time
	counters  Counters
	stop      atomic.Bool

	mu       sync.Mutex
	history  []porcupine.Operation
	fatalErr error    // an answer outside the contract's statuses: the run stops
	texts503 []string // the first few distinct 503 reasons, for the summary
}

// note503 keeps the first few distinct 503 reasons (their text up to the first digit, so that
// counts and durations do not make every one distinct).
func (l *Load) note503(body string) {
	short := body
	if k := strings.IndexAny(short, "0123456789"); k > 0 {
		short = short[:k]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.texts503 {
		if strings.HasPrefix(t, short) {
			return
		}
	}
	if len(l.texts503) < 6 {
		l.texts503 = append(l.texts503, body)
	}
}

func (l *Load) now() int64 { return int64(time.Since(l.start)) }

func (l *Load) record(op porcupine.Operation) {
	l.mu.Lock()
	l.history = append(l.history, op)
	l.mu.Unlock()
}

func (l *Load) fatal(err error) {
	l.mu.Lock()
	if l.fatalErr == nil {
		l.fatalErr = err
	}
	l.mu.Unlock()
	l.stop.Store(true)
}

func (l *Load) keyName(i int) string { return l.keyPrefix + strconv.Itoa(i) }

// checkKeysAbsent: the model starts every key absent (a fresh store), so a run against a store
// that holds them would fail for no fault of the server. Waits up to wait for the server.
func (l *Load) checkKeysAbsent(wait time.Duration) error {
	cn := &conn{addr: l.addr}
	defer cn.close()
	deadline := time.Now().Add(wait)
	for i := 0; i < l.keys; i++ {
		raw := requestBytes(Input{Key: l.keyName(i), Kind: OpGet})
		for {
			resp, _, err := cn.roundTrip(raw, &Counters{})
			if err == nil && resp.StatusCode == 404 {
				break
			}
			if err == nil && resp.StatusCode == 200 {
				return fmt.Errorf("key %s exists before the run: the model starts from a fresh store (use another --key-prefix or an empty store)", l.keyName(i))
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the server at %s did not answer GET /key/%s with 404 within %v (last: %v)", l.addr, l.keyName(i), wait, describeAnswer(resp, err))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

func describeAnswer(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

func pickKind(r *rand.Rand) OpKind {
	n := r.Intn(100)
	for k, w := range opWeights {
		if n < w {
			return OpKind(k)
		}
		n -= w
	}
	return OpGet
}

func requestBytes(in Input) []byte {
	var b strings.Builder
	method := "GET"
	switch {
	case in.Kind.isPut():
		method = "PUT"
	case in.Kind != OpGet:
		method = "DELETE"
	}
	fmt.Fprintf(&b, "%s /key/%s HTTP/1.1\r\nHost: lincheck\r\n", method, in.Key)
	switch in.Kind {
	case OpPutIfMatchAny, OpDeleteIfMatchAny:
		b.WriteString("If-Match: *\r\n")
	case OpPutIfNoneMatchAny:
		b.WriteString("If-None-Match: *\r\n")
	case OpPutIfMatchTag, OpDeleteIfMatchTag:
		fmt.Fprintf(&b, "If-Match: %s\r\n", in.Tag)
	}
	if in.Kind.isPut() {
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(in.Value), in.Value)
	} else {
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}

// expectedStatus: the statuses the contract allows for a key request here (others stop the run:
// they are not a question of ordering).
func expectedStatus(kind OpKind, status int) bool {
	switch status {
	case 503:
		return true
	case 200:
		return kind == OpGet
	case 404:
		return kind == OpGet || kind == OpDelete || kind == OpDeleteIfMatchAny || kind == OpDeleteIfMatchTag
	case 201:
		return kind.isPut()
	case 204:
		return kind != OpGet
	case 412:
		return kind != OpGet && kind != OpPut && kind != OpDelete
	}
	return false
}

// runClient is one client until the load stops.
func (l *Load) runClient(id int, target int64) {
	r := rand.New(rand.NewSource(l.seed*1000 + int64(id)))
	cn := &conn{addr: l.addr}
	defer cn.close()
	tags := map[string]taggedValue{}
	seq := 0
	var interval time.Duration // --rate: each client's share, paced without bursts
	if l.rate > 0 {
		interval = time.Duration(float64(l.clients) / l.rate * float64(time.Second))
	}
	next := time.Now().Add(time.Duration(r.Int63n(int64(interval) + 1)))
	for !l.stop.Load() && l.counters.Done.Load() < target {
		if interval > 0 {
			if wait := time.Until(next); wait > 0 {
				time.Sleep(wait)
			}
			next = next.Add(interval)
			if now := time.Now(); next.Before(now) {
				next = now
			}
		}
		in := Input{Key: l.keyName(r.Intn(l.keys)), Kind: pickKind(r)}
		if in.Kind == OpPutIfMatchTag || in.Kind == OpDeleteIfMatchTag {
			tv, ok := tags[in.Key]
			if !ok {
				in.Kind = OpGet // no ETag seen for this key yet
			} else {
				in.Tag, in.TagValue = tv.tag, tv.value
			}
		}
		if in.Kind.isPut() {
			seq++
			in.Value = fmt.Sprintf("c%d-%d", id, seq)
		}
		call := l.now()
		resp, body, err := cn.roundTrip(requestBytes(in), &l.counters)
		ret := l.now()
		if errors.Is(err, errNotSent) {
			l.counters.NotSent.Add(1)
			time.Sleep(refusedRetry)
			continue
		}
		op := porcupine.Operation{ClientId: id, Input: in, Call: call, Return: ret}
		if err != nil {
			if in.Kind == OpGet {
				l.counters.LostReads.Add(1)
				continue
			}
			l.counters.Unknown.Add(1)
			l.counters.Done.Add(1)
			op.Output = Output{Unknown: true, Note: "answer lost: " + err.Error()}
			op.Return = unknownReturn
			l.record(op)
			continue
		}
		if !expectedStatus(in.Kind, resp.StatusCode) {
			l.fatal(fmt.Errorf("client %d: %s /key/%s answered %d, outside the contract: %s",
				id, in.Kind, in.Key, resp.StatusCode, strings.TrimSpace(string(body))))
			return
		}
		out := Output{Status: resp.StatusCode}
		switch {
		case resp.StatusCode == 503:
			l.counters.Status503.Add(1)
			out.Note = strings.TrimSpace(string(body))
			l.note503(out.Note)
			if notApplied503(body) {
				out.NotApplied = true
				l.counters.NotApplied.Add(1)
			} else if in.Kind == OpGet {
				l.counters.LostReads.Add(1) // a read that failed changed nothing
				continue
			} else {
				out.Unknown = true
				op.Return = unknownReturn
				l.counters.Unknown.Add(1)
			}
		case in.Kind == OpGet && resp.StatusCode == 200:
			out.Value = string(body)
			if tag := resp.Header.Get("ETag"); tag != "" {
				tags[in.Key] = taggedValue{tag, out.Value}
			}
		case in.Kind.isPut() && (resp.StatusCode == 201 || resp.StatusCode == 204):
			if tag := resp.Header.Get("ETag"); tag != "" {
				tags[in.Key] = taggedValue{tag, in.Value}
			}
		}
		op.Output = out
		l.counters.Done.Add(1)
		l.record(op)
	}
}

// runResets sends POST /reset?scope=cache every period until the load stops (it changes no
// key's state: the store keeps every key).
func (l *Load) runResets(period time.Duration) {
	cn := &conn{addr: l.addr}
	defer cn.close()
	raw := []byte("POST /reset?scope=cache HTTP/1.1\r\nHost: lincheck\r\nContent-Length: 0\r\n\r\n")
	for !l.stop.Load() {
		time.Sleep(period)
		resp, _, err := cn.roundTrip(raw, &Counters{})
		if err == nil && resp.StatusCode == 204 {
			l.counters.Resets.Add(1)
		} else {
			l.counters.ResetErrors.Add(1)
		}
	}
}

// unknownReturn marks a write of unknown outcome: it may take effect at any later time. The
// checker moves it to the end of the history (see finish).
const unknownReturn = int64(1) << 62

// Run drives the load until target operations are done or deadline passes; it returns the
// history (unknown-outcome writes ending at the history's end) and whether the target was met.
func (l *Load) Run(target int64, duration, resetEvery time.Duration) ([]porcupine.Operation, bool) {
	var wg sync.WaitGroup
	for i := 0; i < l.clients; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			l.runClient(id, target)
		}(i)
	}
	resetsDone := make(chan struct{})
	if resetEvery > 0 {
		go func() {
			defer close(resetsDone)
			l.runResets(resetEvery)
		}()
	} else {
		close(resetsDone)
	}
	timer := time.AfterFunc(duration, func() { l.stop.Store(true) })
	wg.Wait()
	timer.Stop()
	l.stop.Store(true)
	<-resetsDone
	met := l.counters.Done.Load() >= target
	return finish(l.history), met
}

// finish gives every write of unknown outcome the history's end as its return time.
func finish(history []porcupine.Operation) []porcupine.Operation {
	var end int64
	for _, op := range history {
		if op.Return != unknownReturn && op.Return > end {
			end = op.Return
		}
		if op.Call > end {
			end = op.Call
		}
	}
	for i := range history {
		if history[i].Return == unknownReturn {
			history[i].Return = end + 1
		}
	}
	return history
}
