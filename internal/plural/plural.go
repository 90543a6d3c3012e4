package plural

import (
	"strconv"
	"strings"
)

// Count is n followed by noun, in the plural unless n is 1 or -1: "1 call", "0 calls".
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun is noun (singular, as written in English) in the number n asks for. A fraction agrees
// with its total: "1/1 trial", "0/2 trials". Nouns ending in a consonant and y take -ies, those
// ending in s, x, z, ch or sh take -es, the rest -s; the last word is the one that changes
// ("duplicate execution", "fan-out").
func Noun(n int, noun string) string {
	if n == 1 || n == -1 || noun == "" {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "z"),
		strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}
