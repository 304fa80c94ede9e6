"""Stop-word sets: the words that carry no subject of their own, in one place for every layer.

The sets differ on purpose, by what a word must not become. `FUNCTION_WORDS` never form an entity
name or start a gazetteer match (graph names). `KEYWORD_STOPWORDS` add the filler of technical
prose ("use", "example", "returns") that would otherwise top a chunk's keywords (ingest).
`QUERY_STOPWORDS` is the short list a query's lookup words are filtered by (serve), kept small so
that a short question keeps its content words. `CODE_KEYWORDS` are programming-language keywords
and common identifier fillers, which say nothing about what a code chunk is about.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTION_WORDS: frozenset[str] = _words(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just may me might more most must my myself no nor not now of off on once only or
    other our ours ourselves out over own same shall she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself
    yourselves
    """
)

KEYWORD_STOPWORDS: frozenset[str] = FUNCTION_WORDS | _words(
    """
    able across almost already although always among another anyone anything aren't around
    became become becomes call calls can't cannot couldn't didn't doesn't don't done e.g eg
    either else enough etc even ever every example examples first following follows get gets
    getting given gives go goes going got hadn't hasn't haven't however i.e ie instead isn't
    it's last least less let like likely lot lots made make makes many much mustn't need needs
    neither new next note notes often one onto others otherwise per perhaps rather really return
    returns run runs second see seen set sets several shouldn't since something still that's
    there's they're thing things third though thus together toward towards upon us use used uses
    using usually via vs want wants wasn't way ways well weren't what's whether whose within
    without won't wouldn't yet you'd you'll you're you've
    """
)

QUERY_STOPWORDS: frozenset[str] = _words(
    """
    a about an and are as at be been by can could did do does for from here how i in into is it
    its me my no not of on or our should so than that the their them then there these they this
    those to us was we were what when where which who whom whose why with would yes you your
    """
)

CODE_KEYWORDS: frozenset[str] = _words(
    """
    a and args as async await b bool break c case catch chan class cls const continue data def
    default defer dict do e elif else enum err except extends f false finally float fn for from
    fun func function get go i if impl implements import in int interface is item items j k key
    keys kwargs lambda let list map mod n new nil none not null object or package pass private
    protected pub public raise range result results return s self set static str string struct
    switch t this throw throws true try tuple type use v value values var void while with x y
    yield z
    """
)
