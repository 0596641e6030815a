// Package inflate decodes whole gzip (RFC 1952) and DEFLATE (RFC 1951)
// streams held in memory.
package inflate
