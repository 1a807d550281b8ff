"""The analyzer's languages as plain data, so that reading the configuration does not load
the engine (``rust/src/text/language.rs`` has the same table; a test checks that the two
agree)."""

from __future__ import annotations

LANGUAGES = {
    "arabic": "ar",
    "danish": "da",
    "dutch": "nl",
    "english": "en",
    "finnish": "fi",
    "french": "fr",
    "german": "de",
    "greek": "el",
    "hungarian": "hu",
    "italian": "it",
    "norwegian": "no",
    "portuguese": "pt",
    "romanian": "ro",
    "russian": "ru",
    "spanish": "es",
    "swedish": "sv",
    "tamil": "ta",
    "turkish": "tr",
}
_LANGUAGE_OF = {**{code: name for name, code in LANGUAGES.items()}, **{n: n for n in LANGUAGES}}


def language_name(text: str) -> str | None:
    """The English name of the language ``text`` names by its ISO 639-1 code or English
    name, in any case (``DE``, ``German`` -> ``german``); None for an unknown one."""
    return _LANGUAGE_OF.get(text.strip().lower())


def language_list() -> str:
    """Every language as ``german (de)``, comma-separated, for messages."""
    return ", ".join(f"{name} ({code})" for name, code in LANGUAGES.items())
