//go:build unix

package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// proxy forwards TCP connections from a port on 127.0.0.1 to target,
// delivering every chunk read in either direction delay after it was read,
// in order; while cut, nothing is delivered (the connections stay open,
// as on a partitioned link) until it is healed.
type proxy struct {
	addr   string
	ln     net.Listener
	target string
	delay  time.Duration
	mu     sync.Mutex
	cutCh  chan struct{} // closed when healed; nil when not cut
	conns  []net.Conn
}

func startProxy(t testing.TB, target string, delay time.Duration) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), ln: ln, target: target, delay: delay}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

type chunk struct {
	at   time.Time
	data []byte
}

func (p *proxy) pipe(src, dst net.Conn) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{time.Now(), b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.at.Add(p.delay)))
		p.waitHealed()
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, src)
}

func (p *proxy) waitHealed() {
	p.mu.Lock()
	ch := p.cutCh
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// cut stops delivering; heal delivers what was held back and resumes.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutCh == nil {
		p.cutCh = make(chan struct{})
	}
}

func (p *proxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutCh != nil {
		close(p.cutCh)
		p.cutCh = nil
	}
}

// reset ends a cut as a lost link does: what was held back is dropped
// and the connections are closed (clients connect again).
func (p *proxy) reset() {
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.heal()
}

func (p *proxy) close() {
	p.heal()
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}
