//go:build !race

package arcmsgpack

const raceAllocSlack = 1.0
