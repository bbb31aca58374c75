"""Parse -> chunk -> summarise: the pure steps of ingestion (no database writes).

Parsing goes through LlamaIndex readers (``BaseReader`` -> ``Document``); PDFs are read
with pypdf, one LlamaIndex document per page so citations can name the page. Chunking
is LlamaIndex's ``SentenceSplitter``, run per section so a chunk never straddles two
headings and its anchor points at the heading it sits under.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.text import slugify
from llama_index.core import Document as LIDocument
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.readers.base import BaseReader

from . import numerals
from . import text as ktext

logger = logging.getLogger(__name__)


class IngestError(Exception):
    """The document itself is bad (unreadable PDF, no text): retrying cannot help."""


# -- readers ---------------------------------------------------------------------------------
class PyPdfReader(BaseReader):
    """PDF via pypdf: one LlamaIndex document per page, with the page number."""

    def load_data(self, *args: Any, **kwargs: Any) -> list[LIDocument]:
        data: bytes = kwargs.get("data") or args[0]
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError

        try:
            reader = PdfReader(io.BytesIO(data))
            pages = [page.extract_text() or "" for page in reader.pages]
        except (PdfReadError, ValueError, KeyError) as exc:
            raise IngestError(f"unreadable PDF: {exc}") from exc
        return [
            LIDocument(text=page_text, metadata={"page": number})
            for number, page_text in enumerate(pages, start=1)
            if page_text.strip()
        ]


class _HtmlToMarkdown(HTMLParser):
    """Keeps text and turns h1-h4 into Markdown headings; drops scripts and styles."""

    _SKIP = {"script", "style", "noscript", "template", "head"}
    _BLOCK = {"p", "div", "li", "br", "tr", "section", "article", "ul", "ol", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0
        self._heading = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif re.fullmatch(r"h[1-4]", tag):
            self._heading = int(tag[1])
            self.parts.append("\n\n" + "#" * self._heading + " ")
        elif tag in self._BLOCK:
            self.parts.append("\n- " if tag == "li" else "\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
        elif re.fullmatch(r"h[1-4]", tag):
            self._heading = 0
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(re.sub(r"\s+", " ", data) if self._heading else data)


class HtmlReader(BaseReader):
    def load_data(self, *args: Any, **kwargs: Any) -> list[LIDocument]:
        data: bytes = kwargs.get("data") or args[0]
        parser = _HtmlToMarkdown()
        parser.feed(data.decode("utf-8", errors="replace"))
        parser.close()
        markdown = re.sub(r"\n{3,}", "\n\n", "".join(parser.parts)).strip()
        return [LIDocument(text=markdown, metadata={"markdown": True})]


class TextReader(BaseReader):
    def load_data(self, *args: Any, **kwargs: Any) -> list[LIDocument]:
        data: bytes = kwargs.get("data") or args[0]
        markdown = bool(kwargs.get("markdown"))
        text = data.decode("utf-8-sig", errors="replace")
        return [LIDocument(text=text, metadata={"markdown": markdown})]


READERS: dict[str, BaseReader] = {
    "pdf": PyPdfReader(),
    "html": HtmlReader(),
    "markdown": TextReader(),
    "text": TextReader(),
}


# -- sections and chunks -----------------------------------------------------------------------
@dataclass
class Section:
    heading: str
    anchor: str
    text: str


@dataclass
class ChunkDraft:
    position: int
    anchor: str
    heading: str
    text: str
    token_count: int


_HEADING = re.compile(r"^(#{1,4})\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _slug(text: str) -> str:
    return slugify(text, allow_unicode=True)[:60] or "section"


def _markdown_sections(text: str) -> list[Section]:
    """Split at headings; the heading path ("Returns > Gold members") is kept."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    last = 0
    current = ""
    used: dict[str, int] = {}

    def add(body: str) -> None:
        body = body.strip()
        if not body:
            return
        heading = " > ".join(h for _, h in path) if path else ""
        base = _slug(path[-1][1]) if path else "intro"
        used[base] = used.get(base, 0) + 1
        anchor = base if used[base] == 1 else f"{base}-{used[base]}"
        sections.append(Section(heading=heading, anchor=anchor, text=body))

    for match in _HEADING.finditer(text):
        add(current + text[last : match.start()])
        current = ""
        level, title = len(match.group(1)), match.group(2).strip()
        path = [(lvl, h) for lvl, h in path if lvl < level] + [(level, title)]
        last = match.end()
    add(current + text[last:])
    return sections


def document_sections(*, data: bytes, source_format: str) -> list[Section]:
    reader = READERS.get(source_format, READERS["text"])
    docs = reader.load_data(data=data, markdown=source_format == "markdown")
    sections: list[Section] = []
    for doc in docs:
        if "page" in doc.metadata:
            page = int(doc.metadata["page"])
            sections.append(Section(heading=f"page {page}", anchor=f"p{page}", text=doc.text))
        elif doc.metadata.get("markdown"):
            sections.extend(_markdown_sections(doc.text))
        else:
            # Plain text: blank-line separated blocks, numbered, grouped by the splitter.
            sections.append(Section(heading="", anchor="s1", text=doc.text))
    sections = [s for s in sections if s.text.strip()]
    if not sections:
        raise IngestError("the document has no text")
    return sections


def _splitter() -> SentenceSplitter:
    # The default tokenizer is tiktoken's cl100k, bundled inside llama-index-core
    # (offline). Sizes are in those tokens; MiniLM reads up to 256 word pieces.
    return SentenceSplitter(
        chunk_size=settings.TIERDESK_KB_CHUNK_TOKENS,
        chunk_overlap=settings.TIERDESK_KB_CHUNK_OVERLAP,
        # Chinese sentences end with these; the default regex misses the full-width ones.
        secondary_chunking_regex="[^,.;:!?。？！；：]+[,.;:!?。？！；：]?",
        include_metadata=False,
        include_prev_next_rel=False,
    )


def sections_chunk(sections: list[Section]) -> list[ChunkDraft]:
    splitter = _splitter()
    drafts: list[ChunkDraft] = []
    for section in sections:
        pieces = splitter.split_text(section.text)
        for i, piece in enumerate(pieces):
            piece = piece.strip()
            if not piece:
                continue
            anchor = section.anchor if len(pieces) == 1 else f"{section.anchor}#{i + 1}"
            drafts.append(
                ChunkDraft(
                    position=len(drafts),
                    anchor=anchor[:160],
                    heading=section.heading[:200],
                    text=piece,
                    token_count=ktext.estimate_tokens(piece),
                )
            )
    return drafts


def embedding_text(*, title: str, heading: str, text: str) -> str:
    """What gets embedded for a chunk: the title and heading give a short passage its
    topic ("Is it waterproof?" means nothing without "Boots FAQ")."""
    lead = " > ".join(p for p in (title, heading) if p)
    return f"{lead}\n{text}" if lead else text


# -- summaries -----------------------------------------------------------------------------------
# The worked example is about a made-up topic no shop's article covers (umbrella
# repairs): an example about gift cards leaked "how to replace a lost card" into the
# summary of a gift-card article that says no such thing. The summary states facts in
# the article's words, so the entailment check (``summary_check``) can verify it.
_SUMMARY_EXAMPLE = {
    "en": (
        "Umbrella repairs\nWe repair umbrellas free of charge within 12 months of purchase. "
        "After that, a repair costs $8. Repairs take five business days.",
        "We repair umbrellas free of charge within 12 months of purchase; after that a "
        "repair costs $8.",
    ),
    "zh": (
        "雨伞维修\n雨伞自购买起12个月内免费维修。超过12个月，每次维修收费8美元。维修需要5个工作日。",
        "雨伞自购买起12个月内免费维修，超过12个月每次维修收费8美元。",
    ),
}


def summary_prompt(*, title: str, body: str, language: str) -> str:
    """A few-shot completion prompt for the fast (base) model: one example, then ours."""
    lang = language if language in _SUMMARY_EXAMPLE else "en"
    example_in, example_out = _SUMMARY_EXAMPLE[lang]
    header = (
        "Each article is followed by a one-sentence summary of at most 50 words.\n\n"
        if lang == "en"
        else "每篇文章后面是一句不超过50字的摘要。\n\n"
    )
    excerpt = _truncate_tokens(body, 420)
    label_a, label_s = ("Article", "Summary") if lang == "en" else ("文章", "摘要")
    return (
        f"{header}{label_a}: {example_in}\n{label_s}: {example_out}\n\n"
        f"{label_a}: {title}\n{excerpt}\n{label_s}:"
    )


def _truncate_tokens(text: str, budget: int) -> str:
    out: list[str] = []
    used = 0
    # A full stop ends a sentence only before a space (or a Chinese one anywhere):
    # "$4.99" is one figure, and the model copies what it is shown ("$4.").
    for sentence in re.split(r"(?<=[.!?])\s+|(?<=[。！？])\s*", text):
        cost = ktext.estimate_tokens(sentence)
        if used + cost > budget:
            break
        out.append(sentence)
        used += cost
    return " ".join(out) if out else text[: budget * 2]


_FIGURE_PART = re.compile(r"[\d.,]")


def clip_chars(text: str, limit: int) -> str:
    """At most ``limit`` characters, never ending inside a figure ("4.99" is kept
    whole or left out, never "4.")."""
    if len(text) <= limit:
        return text
    cut = limit
    while cut > 0 and _FIGURE_PART.match(text[cut]) and _FIGURE_PART.match(text[cut - 1]):
        cut -= 1
    return text[:cut].rstrip(".,")


def summary_clean(raw: str, *, language: str, max_words: int) -> str:
    """Keep the first line, at most ``max_words`` words (CJK: two characters a word)."""
    line = raw.strip().split("\n")[0].strip()
    if ktext.has_cjk(line):
        return clip_chars(line, max_words * 2)
    return " ".join(line.split()[:max_words])


def summary_fallback(*, sections: list[Section], language: str, max_words: int) -> str:
    """Extractive summary (the opening sentences) when no model is configured or its
    output is unusable: a summary that is only copied text can't invent anything."""
    body = " ".join(s.text for s in sections)
    body = re.sub(r"^#+\s*", "", body, flags=re.MULTILINE)
    body = re.sub(r"\s+", " ", body).strip()
    if ktext.has_cjk(body) and language == "zh":
        sentences = re.split(r"(?<=[。！？])", body)
        out = ""
        for s in sentences:
            if len(out) + len(s) > max_words * 2:
                break
            out += s
        return out or clip_chars(body, max_words * 2)
    return " ".join(body.split()[:max_words])


def summary_check(summary: str, *, body: str) -> str:
    """The summary's sentences that the article entails, in order ("" : none). A
    summary is shown to the reader model as context, so an invented sentence in it
    would become an invented answer."""
    from . import entail

    figures = {q.value for q in numerals.quantities(body)}
    kept = [
        sentence
        for sentence in entail.sentences(summary)
        # A figure the article doesn't write whole ("$4." of "$4.99") is a cut one.
        if {q.value for q in numerals.quantities(sentence)} <= figures
        and entail.claim_check(sentence, [body]).label == "entailed"
    ]
    return ("" if ktext.has_cjk(summary) else " ").join(kept)


def summary_usable(summary: str, *, body: str) -> bool:
    """Reject model output that is empty, looping, or mostly about something else."""
    if len(summary) < 12:
        return False
    words = ktext.content_words(summary)
    if not words:
        return False
    if len(set(words)) < len(words) / 2:
        return False  # looping ("the the the")
    present = set(ktext.content_words(body))
    return sum(1 for w in words if w in present) / len(words) >= 0.5


def read_source(*, file_name: str, file_bytes: bytes | None, text: str) -> bytes:
    if file_bytes is not None:
        return file_bytes
    return text.encode("utf-8")


def suffix_of(name: str) -> str:
    return Path(name).suffix.lower()
