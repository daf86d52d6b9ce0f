"""Images at the model boundary: stored once by SHA-256, referenced by hash in every stored request.

A vision harness sends each observation as an OpenAI ``image_url`` content part carrying a
``data:image/png;base64,...`` URL. Keeping that base64 in every recorded request would repeat the same
screenshot in each later request (the history grows) and bloat every seed, so the boundary stores
the request with each data URL replaced by a reference ``failforge-image:sha256:<hex>`` and the bytes
written once to an :class:`ImageStore` (``<hex>.png``). The request hash is taken on the same form
(:func:`canonical_parts`), so two requests hash alike exactly when their images are byte-identical:
a replay whose screenshot changed by one pixel is a :class:`~failforge.errors.PromptDrift` naming the
step, and a stored request can be turned back into the one that was sent (:func:`inline`).

Images travel with the dataset: every JSONL file failforge writes whose records name images (seeds,
a campaign's gold/rejected/failed, a seeds copy) gets those images copied into the folder ``images/``
beside it (:data:`BESIDE_DIR`, :func:`store_beside`), so copying the folder moves the dataset. Reading such
a file (:func:`failforge.jsonl.read_jsonl`) brings that folder's images into the store
(``$FAILFORGE_IMAGE_DIR``, hard links where it can), the one place every reader looks: no search path lives
in the process's environment. A record whose image is missing from its
file's folder is reported and skipped by :func:`missing_image` (one line: file, record, sha256).

A dataset folder is the user's, and may be hostile: every image file is read by :func:`read_image`, which
opens only a regular file inside its folder (no symbolic link out of it, never a FIFO or a device: checked
with ``lstat`` before the file is opened, and opened non-blocking), at most :data:`MAX_IMAGE_BYTES` long,
and with the PNG signature. A refused file is one line (:class:`ImageRefused`, naming the file and why)
and the records that name it are skipped as missing their image; the rest of the dataset is used.

Video is not handled (no frame parts exist in the chat-completions format failforge serves).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from failforge.errors import ConfigError, ModelUnavailable

#: How a stored request names an image instead of carrying its bytes.
REF_PREFIX = "failforge-image:sha256:"
_DATA_PREFIX = "data:"
IMAGE_DIR_ENV = "FAILFORGE_IMAGE_DIR"
#: The folder beside a dataset file that holds its images (``<folder of the file>/images/<sha256>.png``).
BESIDE_DIR = "images"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_REF_RE = re.compile(re.escape(REF_PREFIX) + r"([0-9a-f]{64})")
_IMAGES_LIST_RE = re.compile(r'"images":\s*\[([^\]]*)\]')
#: The largest image file a dataset may hold (a screenshot is well under 1 MB).
MAX_IMAGE_BYTES = 32 * 1024 * 1024
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

log = logging.getLogger("failforge.images")


class ImageMissing(ConfigError):
    """An image a record references is not in the store (a dataset folder copied without its images)."""


class ImageRefused(ImageMissing):
    """An image file that is not read: not a regular file inside its folder, too large, or not a PNG."""


def is_sha256(value: str) -> bool:
    """Whether ``value`` is a lowercase hex SHA-256 (what an image reference must be: never a path)."""
    return bool(_HEX64.fullmatch(value))


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_image(path: Path | str, folder: Path | str | None = None, *, limit: int = MAX_IMAGE_BYTES) -> bytes:
    """The bytes of image file ``path``, read only when it is safe to: a regular file (checked with ``lstat``
    before it is opened, and again on the open descriptor), inside ``folder`` (default: its own folder) even
    through a symbolic link, at most ``limit`` bytes, starting with the PNG signature. Opened non-blocking,
    so a FIFO swapped in between the check and the open cannot hang the reader. Otherwise
    :class:`ImageRefused` with a one-line reason naming the file."""
    path = Path(path)
    root = Path(folder) if folder is not None else path.parent
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise ImageMissing(f"{path}: no such image file") from None
    except OSError as exc:
        raise ImageRefused(f"{path}: refused: cannot be read ({exc.strerror})") from None
    target = path
    if stat.S_ISLNK(info.st_mode):
        resolved = Path(os.path.realpath(path))
        if not resolved.is_relative_to(Path(os.path.realpath(root))):
            raise ImageRefused(f"{path}: refused: a symbolic link out of its folder {root}")
        target = resolved
        try:
            info = os.lstat(target)
        except OSError:
            raise ImageMissing(f"{path}: a symbolic link to nothing") from None
    if not stat.S_ISREG(info.st_mode):
        raise ImageRefused(f"{path}: refused: {_kind_of(info.st_mode)}, not a regular file")
    if info.st_size > limit:
        raise ImageRefused(f"{path}: refused: {info.st_size} bytes, more than the {limit} an image may have")
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ImageRefused(f"{path}: refused: cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise ImageRefused(f"{path}: refused: it changed between its check and its opening")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ImageRefused(f"{path}: refused: more than the {limit} bytes an image may have")
    if not data.startswith(PNG_SIGNATURE):
        raise ImageRefused(f"{path}: refused: not a PNG (its first bytes are not the PNG signature)")
    return data


def is_regular(path: Path) -> bool:
    """Whether ``path`` itself (not what a link points to) is a regular file: never opens it."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _present(path: Path, folder: Path) -> bool:
    """Whether ``path`` is a regular file, or a link to one inside ``folder`` (what :func:`read_image` reads)."""
    if is_regular(path):
        return True
    if not path.is_symlink():
        return False
    resolved = Path(os.path.realpath(path))
    return resolved.is_relative_to(Path(os.path.realpath(folder))) and is_regular(resolved)


class ImageInputRejected(ModelUnavailable):
    """The model endpoint refused a request because it carries image parts (a text-only model)."""


def image_rejection(exc: ModelUnavailable, body: dict[str, Any]) -> ModelUnavailable:
    """``exc`` as :class:`ImageInputRejected` when the refused request carried images and the endpoint
    says so (its error text names images), else ``exc`` unchanged: one line naming the model and the fallback."""
    text = str(exc).lower()
    if not image_refs(body) or not any(
        word in text for word in ("image", "vision", "multimodal", "content part", "image_url")
    ):
        return exc
    return ImageInputRejected(
        f"model {body.get('model')!r} rejects image input ({str(exc).splitlines()[0][:200]}); use a vision model, or"
        " fall back to DOM text: harness failforge.miniwob_vision with observation='dom', or the builtin harness with"
        " the miniwob action_space='bid'"
    )


def default_image_dir() -> Path:
    """The process's image store: ``$FAILFORGE_IMAGE_DIR``, else ``<FAILFORGE_CACHE_DIR or
    ~/.cache/failforge>/images``."""
    explicit = os.environ.get(IMAGE_DIR_ENV)
    if explicit:
        return Path(explicit)
    root = os.environ.get("FAILFORGE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "failforge")
    return Path(root) / "images"


def beside_dir(path: Path | str) -> Path:
    """The images folder of a dataset file: ``images/`` in the file's own folder (shared by the files there)."""
    return Path(path).absolute().parent / BESIDE_DIR


def use_images_beside(path: Path | str) -> Path | None:
    """Bring the images of dataset file ``path`` (the ``images/`` folder beside it) into the store: each PNG
    whose bytes match its name is hard-linked (or copied) there once. The store is then the one place every
    reader (this process, campaign workers, a report) looks, and no search path has to be carried in the
    environment; the folder stays the dataset's own copy (:func:`missing_image` checks it, not the store).
    Returns the folder, or None when the file has none. A file :func:`read_image` refuses is one log line
    (see :func:`images_beside`, which returns those lines) and is not brought in."""
    folder, refused = images_beside(path)
    for line in refused:
        log.warning("%s", line)
    return folder


def images_beside(path: Path | str) -> tuple[Path | None, list[str]]:
    """:func:`use_images_beside`'s work: the folder (or None) and one line per image file refused."""
    folder = beside_dir(path)
    if folder.is_symlink():
        return None, [f"{folder}: refused: a symbolic link, not the dataset's own images folder"]
    if not folder.is_dir():
        return None, []
    store = ImageStore()
    refused: list[str] = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        digest, _, suffix = entry.name.partition(".")
        if suffix != "png" or not _HEX64.fullmatch(digest) or store.path(digest).is_file():
            continue
        png = Path(entry.path)
        try:
            data = read_image(png, folder)
        except ImageMissing as exc:
            refused.append(str(exc))
            continue
        if hashlib.sha256(data).hexdigest() != digest:
            continue  # an edited file is not this image: get() refuses it by name when a record needs it
        try:
            store.directory.mkdir(parents=True, exist_ok=True)
            if not is_regular(png):  # a link inside the folder: its bytes are stored, never the link
                raise OSError("not a regular file")
            os.link(png, store.path(digest), follow_symlinks=False)
        except OSError:  # another filesystem, or a concurrent reader linked it first
            if not store.path(digest).is_file():
                store.put(data)
    return folder, refused


class ImageStore:
    """A folder of images named by the SHA-256 of their bytes (``<hex>.png``); writes are atomic and idempotent.

    ``ImageStore()`` is the default store (``$FAILFORGE_IMAGE_DIR``), into which reading a dataset file brings
    its images (:func:`use_images_beside`). ``ImageStore(directory)`` reads that folder (and ``search``
    before it, when given)."""

    def __init__(self, directory: Path | str | None = None, search: Iterable[Path | str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_image_dir()
        self._search = [Path(p) for p in search] if search is not None else []

    def path(self, digest: str) -> Path:
        """Where ``put`` writes ``digest`` (the store's own folder)."""
        return self.directory / f"{digest}.png"

    def locate(self, digest: str) -> Path | None:
        """The first file holding ``digest``: a ``search`` folder, else the store; None if absent.
        Never a path: a digest that is not a SHA-256 locates nothing."""
        if not is_sha256(digest):
            return None
        for folder in [*self._search, self.directory]:
            candidate = folder / f"{digest}.png"
            if os.path.lexists(candidate):
                return candidate
        return None

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if not target.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        return digest

    def get(self, digest: str) -> bytes:
        """The bytes stored as ``digest``, checked against it (a file edited in place is refused)."""
        target = self.locate(digest)
        try:
            if target is None:
                raise FileNotFoundError(digest)
            data = read_image(target)
        except ImageRefused:
            raise
        except (FileNotFoundError, ImageMissing):
            raise ImageMissing(
                f"image {digest[:12]} is not in the image store {self.directory} (copy the dataset's images/ folder"
                " with it)"
            ) from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise ImageMissing(f"image file {target} does not hash to its name: it was changed after it was stored")
        return data

    def has(self, digest: str) -> bool:
        return self.locate(digest) is not None


def digests_in_text(text: str) -> list[str]:
    """The sha256 of every image a serialised record names: request references and ``"images"`` lists
    (a step's screenshots, or export refs carrying their sha256), in first-seen order."""
    if REF_PREFIX not in text and '"images":' not in text:
        return []
    found = dict.fromkeys(_REF_RE.findall(text))
    for listing in _IMAGES_LIST_RE.findall(text):
        found.update(dict.fromkeys(_HEX64.findall(listing)))
    return list(found)


def store_beside(path: Path | str, text: str, store: ImageStore | None = None) -> list[str]:
    """Copy every image ``text`` (records about to be written to ``path``) names into the images folder
    beside ``path``, checked against its hash; returns the digests copied. Raises :class:`ImageMissing`
    (before anything is written) when one is nowhere to be found, so no file names an image it lacks."""
    digests = digests_in_text(text)
    if not digests:
        return []
    folder = beside_dir(path)
    source = store or ImageStore()
    copied: list[str] = []
    for digest in digests:
        target = folder / f"{digest}.png"
        if is_regular(target):
            continue
        try:
            data = source.get(digest)
        except ImageMissing as exc:
            raise ImageMissing(f"{path}: cannot write a record naming image {digest}: {exc}") from None
        folder.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
        copied.append(digest)
    use_images_beside(path)
    return copied


def record_images(record: Any) -> list[str]:
    """The sha256 of every image a trajectory names: its steps' screenshots and its requests' references."""
    found: dict[str, None] = {}
    for step in getattr(record, "steps", None) or []:
        found.update(dict.fromkeys(h for h in getattr(step, "images", None) or [] if isinstance(h, str)))
        call = getattr(step, "model_call", None)
        if call is not None and isinstance(getattr(call, "request", None), dict):
            found.update(dict.fromkeys(image_refs(call.request)))
    return list(found)


def missing_image(path: Path | str, record: Any) -> str | None:
    """The first image a record read from ``path`` names that is not there: in the images folder beside
    ``path`` when the file has one (a dataset folder must be whole; the cache does not count), else in the
    store (a file written before images travelled with it). None when all are present.

    ``record`` is a trajectory (:func:`record_images`) or a serialised line (:func:`digests_in_text`)."""
    digests = digests_in_text(record) if isinstance(record, str) else record_images(record)
    if not digests:
        return None
    folder = beside_dir(path)
    if folder.is_dir():
        return next((d for d in digests if not _present(folder / f"{d}.png", folder)), None)
    store = ImageStore()
    return next((d for d in digests if not store.has(d)), None)


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_part(data: bytes) -> dict[str, Any]:
    """The OpenAI chat content part for a PNG."""
    return {"type": "image_url", "image_url": {"url": data_url(data)}}


def decode_data_url(url: str) -> bytes | None:
    """The bytes of a base64 ``data:`` URL, else None (an http URL, a reference)."""
    if not url.startswith(_DATA_PREFIX) or ";base64," not in url:
        return None
    try:
        return base64.b64decode(url.split(";base64,", 1)[1], validate=True)
    except (binascii.Error, ValueError):
        return None


def ref_of(url: str) -> str | None:
    """The sha256 a reference URL names, else None."""
    return url[len(REF_PREFIX) :] if url.startswith(REF_PREFIX) else None


def _map_parts(body: dict[str, Any], fn: Any) -> dict[str, Any]:
    """A copy of ``body`` whose image parts' URLs went through ``fn`` (untouched messages are shared)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body
    out_messages = []
    changed = False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            out_messages.append(message)
            continue
        parts = []
        for part in content:
            url = (
                (part.get("image_url") or {}).get("url")
                if isinstance(part, dict) and part.get("type") == "image_url"
                else None
            )
            new = fn(url) if isinstance(url, str) else None
            if new is not None and new != url:
                part = {**part, "image_url": {**part["image_url"], "url": new}}
                changed = True
            parts.append(part)
        out_messages.append({**message, "content": parts})
    return {**body, "messages": out_messages} if changed else body


def canonical_parts(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with every inline image replaced by its hash reference: what the request hash is taken on."""

    def to_ref(url: str) -> str | None:
        data = decode_data_url(url)
        return None if data is None else REF_PREFIX + hashlib.sha256(data).hexdigest()

    return _map_parts(body, to_ref)


def externalise(body: dict[str, Any], store: ImageStore | None = None) -> dict[str, Any]:
    """``body`` as it is stored: each inline image written once to ``store`` and replaced by its reference."""
    target = store or ImageStore()

    def to_ref(url: str) -> str | None:
        data = decode_data_url(url)
        return None if data is None else REF_PREFIX + target.put(data)

    return _map_parts(body, to_ref)


def inline(body: dict[str, Any], store: ImageStore | None = None) -> dict[str, Any]:
    """A stored request with its references turned back into the data URLs that were sent."""
    source = store or ImageStore()

    def to_data(url: str) -> str | None:
        digest = ref_of(url)
        return None if digest is None else data_url(source.get(digest))

    return _map_parts(body, to_data)


def image_refs(body: dict[str, Any]) -> list[str]:
    """The sha256 of every image in ``body`` (inline or referenced), in order (a read-only walk: it runs
    on every request of every record read, text-only ones included)."""
    found: list[str] = []
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for part in content:
            if not (isinstance(part, dict) and part.get("type") == "image_url"):
                continue
            url = (part.get("image_url") or {}).get("url")
            if not isinstance(url, str):
                continue
            digest = ref_of(url)
            if digest is None:
                data = decode_data_url(url)
                digest = hashlib.sha256(data).hexdigest() if data is not None else None
            if digest is not None:
                found.append(digest)
    return found


def last_image(body: dict[str, Any], store: ImageStore | None = None) -> bytes | None:
    """The bytes of the latest image in ``body`` (inline, or a reference read from ``store``); None without one."""
    messages = body.get("messages")
    for message in reversed(messages if isinstance(messages, list) else []):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for part in reversed(content):
            if isinstance(part, dict) and part.get("type") == "image_url":
                url = str((part.get("image_url") or {}).get("url", ""))
                data = decode_data_url(url)
                if data is not None:
                    return data
                digest = ref_of(url)
                if digest is not None:
                    return (store or ImageStore()).get(digest)
    return None


__all__ = [
    "BESIDE_DIR",
    "IMAGE_DIR_ENV",
    "MAX_IMAGE_BYTES",
    "PNG_SIGNATURE",
    "REF_PREFIX",
    "ImageInputRejected",
    "ImageMissing",
    "ImageRefused",
    "images_beside",
    "is_sha256",
    "read_image",
    "ImageStore",
    "canonical_parts",
    "data_url",
    "decode_data_url",
    "beside_dir",
    "default_image_dir",
    "digests_in_text",
    "externalise",
    "image_part",
    "image_refs",
    "image_rejection",
    "inline",
    "last_image",
    "missing_image",
    "record_images",
    "ref_of",
    "store_beside",
    "use_images_beside",
]
