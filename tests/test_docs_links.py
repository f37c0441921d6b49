"""The README and the pages of docs/: every page reachable from the README, every link
inside the repository and to something that exists (a file, and a heading for an anchor)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _links(page: Path):
    """The targets of the page's links, code (fenced blocks, inline) left out."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    for target in LINK.findall(text):
        yield target


def test_every_link_stays_in_the_repository_and_resolves():
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    bad = []
    for page in pages:
        for target in _links(page):
            if re.match(r"[a-z]+:", target):
                bad.append(f"{page.name}: {target} leaves the repository")
                continue
            path, _, anchor = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if not where.exists():
                bad.append(f"{page.name}: {target} does not exist")
            elif anchor:
                headings = {_anchor(h) for h in re.findall(r"^#+ (.*)$", where.read_text(), re.M)}
                if anchor not in headings:
                    bad.append(f"{page.name}: no heading for #{anchor} in {where.name}")
    assert not bad, "\n".join(bad)


def test_every_docs_page_is_reachable_from_the_readme():
    seen, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in seen or page.suffix != ".md" or not page.exists():
            continue
        seen.add(page)
        todo += [(page.parent / t.partition("#")[0]).resolve() for t in _links(page)
                 if not re.match(r"[a-z]+:", t) and t.partition("#")[0]]
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in seen]
    assert not missing, f"pages no link from the README reaches: {missing}"


def test_the_readme_is_what_a_newcomer_needs_first():
    """What it is, the two set-up commands, a first kernel, a first array program, how other
    frameworks' kernels run, the cluster in five lines, the pages: the details live in
    docs/."""
    text = (ROOT / "README.md").read_text()
    headings = re.findall(r"^## (.*)$", text, re.M)
    assert headings == ["Set-up on a fresh machine", "A first kernel", "A first array program",
                        "Kernels from other frameworks", "Races and memory errors: dptx sanitize",
                        "The cluster in five lines", "Documentation"]
    assert len(re.findall(r"```bash\n", text)) == 4     # the two set-up commands, sanitize,
    #                                                     the cluster
    assert len(text) < 8000
