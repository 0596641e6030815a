// Package bufpool keeps byte buffers between uses, so that a process that
// handles one large buffer after another (a gRPC frame, a DoPut message, a
// Parquet page) does not allocate, zero and collect a fresh one each time.
//
// Classes rounds a size up to one of a few capacities: powers of two, or a
// number of steps per power of two (at most 1/steps more than asked), so
// that a buffer given back fits the next request of about its size. Pool
// keeps the buffers of each class on a free list, up to a limit of bytes
// in all, and counts what it keeps and hands out. What a user does with a
// buffer (clear it, poison it, count references to it) is the user's
// policy, not the pool's.
package bufpool
