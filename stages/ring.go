package stages

// ring is a fixed-capacity FIFO of record indices. Its storage is allocated once,
// so queueing work costs no allocation.
type ring struct {
	buf   []int32
	head  int
	count int
}

func newRing(n int) ring { return ring{buf: make([]int32, n)} }

func (r *ring) len() int { return r.count }

func (r *ring) push(id int32) {
	if r.count == len(r.buf) { // only the unbounded baselines outgrow the queue
		r.grow(max(2*len(r.buf), 1))
	}
	r.buf[(r.head+r.count)%len(r.buf)] = id
	r.count++
}

// grow moves the ring into storage for n indices, n >= len.
func (r *ring) grow(n int) {
	grown := make([]int32, n)
	for i := 0; i < r.count; i++ {
		grown[i] = r.at(i)
	}
	r.buf, r.head = grown, 0
}

func (r *ring) peek() (int32, bool) {
	if r.count == 0 {
		return 0, false
	}
	return r.buf[r.head], true
}

func (r *ring) pop() {
	r.head = (r.head + 1) % len(r.buf)
	r.count--
}

// at returns the i-th waiting record, 0 being the head.
func (r *ring) at(i int) int32 { return r.buf[(r.head+i)%len(r.buf)] }

// filter keeps, in order, the indices for which keep reports true.
func (r *ring) filter(keep func(int32) bool) {
	n := 0
	for i := 0; i < r.count; i++ {
		id := r.at(i)
		if keep(id) {
			r.buf[(r.head+n)%len(r.buf)] = id
			n++
		}
	}
	r.count = n
}
