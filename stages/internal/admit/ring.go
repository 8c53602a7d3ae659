package admit

// ring is a fixed-capacity FIFO: of record indices for the queue, of
// tombstones for identities. Its storage is allocated once, so queueing
// work costs no allocation.
type ring[T any] struct {
	buf   []T
	head  int
	count int
}

func newRing[T any](n int) ring[T] { return ring[T]{buf: make([]T, n)} }

func (r *ring[T]) len() int { return r.count }

func (r *ring[T]) push(v T) {
	if r.count == len(r.buf) { // only the unbounded baselines outgrow the queue
		r.grow(max(2*len(r.buf), 1))
	}
	r.buf[r.wrap(r.head+r.count)] = v
	r.count++
}

// grow moves the ring into storage for n indices, n >= len.
func (r *ring[T]) grow(n int) {
	grown := make([]T, n)
	for i := 0; i < r.count; i++ {
		grown[i] = r.at(i)
	}
	r.buf, r.head = grown, 0
}

func (r *ring[T]) peek() (T, bool) {
	if r.count == 0 {
		var zero T
		return zero, false
	}
	return r.buf[r.head], true
}

func (r *ring[T]) pop() {
	r.head = r.wrap(r.head + 1)
	r.count--
}

// at returns the i-th waiting record, 0 being the head.
func (r *ring[T]) at(i int) T { return r.buf[r.wrap(r.head+i)] }

// wrap maps i, at most twice the capacity, into the buffer: a comparison
// where % would divide (the capacity is Limits.Waiting, any number), which
// was a measurable part of an admission cycle's three ring operations.
func (r *ring[T]) wrap(i int) int {
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return i
}

// filter keeps, in order, the indices for which keep reports true.
func (r *ring[T]) filter(keep func(T) bool) {
	n := 0
	for i := 0; i < r.count; i++ {
		v := r.at(i)
		if keep(v) {
			r.buf[r.wrap(r.head+n)] = v
			n++
		}
	}
	r.count = n
}
