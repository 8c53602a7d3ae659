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
	r.buf[r.wrap(r.head+r.count)] = id
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
	r.head = r.wrap(r.head + 1)
	r.count--
}

// at returns the i-th waiting record, 0 being the head.
func (r *ring) at(i int) int32 { return r.buf[r.wrap(r.head+i)] }

// wrap maps i, at most twice the capacity, into the buffer: a comparison
// where % would divide (the capacity is Limits.Waiting, any number), which
// was a measurable part of an admission cycle's three ring operations.
func (r *ring) wrap(i int) int {
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return i
}

// filter keeps, in order, the indices for which keep reports true.
func (r *ring) filter(keep func(int32) bool) {
	n := 0
	for i := 0; i < r.count; i++ {
		id := r.at(i)
		if keep(id) {
			r.buf[r.wrap(r.head+n)] = id
			n++
		}
	}
	r.count = n
}
