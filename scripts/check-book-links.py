#!/usr/bin/env python3
"""Checks the links of a built mdBook without the network.

    scripts/check-book-links.py docs/book [README.md …]

Reads every HTML page under the directory and checks each link and resource it names:
a relative link must reach a file inside the book, and a link with a fragment
(`page.html#anchor`, `#anchor`) must reach an element with that id (or a named anchor)
on that page. Links with a scheme (https:, mailto:) are counted, not fetched. Each
Markdown file named after the book (README.md) is checked the same way: its relative
links must reach files of the repository, and an anchor on a link into the book's
sources (`docs/src/…/page.md#anchor`) must be an id of that page as built. Prints
every broken link with the page that holds it, and exits 1 when there is one, 2 when the
directory is not a built book.
"""

import html.parser
import os
import re
import sys
import urllib.parse

# mdBook's 404 page links with site-absolute paths meant for a web server's root.
SKIPPED_PAGES = {"404.html"}


class Page(html.parser.HTMLParser):
    """The ids a page defines and the links it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            value = attrs.get(key)
            if value is not None and tag in ("a", "link", "script", "img", "iframe"):
                self.links.append((tag, value))


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def check_markdown(md, root, pages, broken):
    """Checks the relative links of a Markdown file outside the book; returns how many."""
    src = os.path.join(os.path.dirname(root), "src")
    base = os.path.dirname(os.path.abspath(md))
    with open(md, encoding="utf-8") as f:
        text = f.read()
    checked = 0
    for link in MD_LINK.findall(text):
        parts = urllib.parse.urlsplit(link)
        if parts.scheme or parts.netloc:
            continue
        checked += 1
        target = os.path.normpath(os.path.join(base, urllib.parse.unquote(parts.path)))
        if parts.path and not os.path.exists(target):
            broken.append((md, link, f"no file {os.path.relpath(target)}"))
            continue
        if not parts.fragment:
            continue
        if parts.path and os.path.commonpath([target, src]) == src and target.endswith(".md"):
            page = os.path.relpath(target, src)[: -len(".md")] + ".html"
            if page not in pages:
                broken.append((md, link, f"{page} is not in the book (SUMMARY.md)"))
            elif parts.fragment not in pages[page].ids:
                broken.append((md, link, f"no anchor #{parts.fragment} in {page}"))
    return checked


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.realpath(argv[1])
    if not os.path.isfile(os.path.join(root, "index.html")):
        print(f"check-book-links: {root} has no index.html: build the book first "
              "(mdbook build docs)", file=sys.stderr)
        return 2
    pages = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                pages[os.path.relpath(path, root)] = parse(path)
    broken, checked, external = [], 0, 0
    for rel, page in sorted(pages.items()):
        if os.path.basename(rel) in SKIPPED_PAGES:
            continue
        for tag, link in page.links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or parts.netloc:
                external += 1
                continue
            checked += 1
            target = rel
            if parts.path:
                if parts.path.startswith("/"):
                    broken.append((rel, link, "a site-absolute path (the book is read from files)"))
                    continue
                joined = os.path.normpath(
                    os.path.join(os.path.dirname(rel), urllib.parse.unquote(parts.path)))
                if joined.startswith(".."):
                    broken.append((rel, link, "leaves the book"))
                    continue
                full = os.path.join(root, joined)
                if os.path.isdir(full):
                    joined = os.path.join(joined, "index.html")
                    full = os.path.join(root, joined)
                if not os.path.isfile(full):
                    broken.append((rel, link, f"no file {joined}"))
                    continue
                target = joined
            fragment = urllib.parse.unquote(parts.fragment)
            if fragment and target in pages and fragment not in pages[target].ids:
                broken.append((rel, link, f"no anchor #{fragment} in {target}"))
    for md in argv[2:]:
        checked += check_markdown(md, root, pages, broken)
    for rel, link, why in broken:
        print(f"check-book-links: {rel}: {link}: {why}", file=sys.stderr)
    print(f"check-book-links: {len(pages)} pages, {checked} internal links checked, "
          f"{len(broken)} broken, {external} external links not fetched")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
