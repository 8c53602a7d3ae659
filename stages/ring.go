package stages

// ring is a fixed-capacity FIFO of identities. Its storage is allocated once,
// so queueing work costs no allocation.
type ring struct {
	buf   []string
	head  int
	count int
}

func newRing(n int) ring { return ring{buf: make([]string, n)} }

func (r *ring) len() int { return r.count }

func (r *ring) push(id string) {
	r.buf[(r.head+r.count)%len(r.buf)] = id
	r.count++
}

func (r *ring) peek() (string, bool) {
	if r.count == 0 {
		return "", false
	}
	return r.buf[r.head], true
}

func (r *ring) pop() {
	r.buf[r.head] = ""
	r.head = (r.head + 1) % len(r.buf)
	r.count--
}

// at returns the i-th waiting identity, 0 being the head.
func (r *ring) at(i int) string { return r.buf[(r.head+i)%len(r.buf)] }

// filter keeps, in order, the identities for which keep reports true.
func (r *ring) filter(keep func(string) bool) {
	n := 0
	for i := 0; i < r.count; i++ {
		id := r.at(i)
		if keep(id) {
			r.buf[(r.head+n)%len(r.buf)] = id
			n++
		}
	}
	for i := n; i < r.count; i++ {
		r.buf[(r.head+i)%len(r.buf)] = ""
	}
	r.count = n
}
