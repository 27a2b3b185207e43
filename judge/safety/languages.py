"""Injection signals in many languages: small lexicons and proximity, not sentence patterns.

An instruction aimed at a judge needs few ideas whatever its language: *ignore* + *the
instructions* ("olvida las instrucciones anteriores", "忽略之前的所有指令"), or *the
evaluator* + *a favourable verdict* ("Hinweis an den Bewerter: ... bestanden", "採点者へ：...
合格"). Each language contributes words for those ideas (:data:`LEXICON`); a text is scanned
once, every word it contains is looked up, and a rule fires when the right ideas stand close
together. That generalises over word order and phrasing better than a sentence pattern, and a
new language is a few lines of words.

Words are folded with :func:`judge.safety.folding.fold` (so "évaluateur" and "evaluateur" are
the same); a trailing ``*`` marks a stem that matches any ending (Russian, Polish and German
inflect). Scripts written without spaces (Chinese, Japanese, Thai) and phrases of several words
are found by substring search.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from judge.safety.folding import fold

# Ideas. IGNORE: set aside; INSTR: the instructions or rubric; PRIOR: previous / all;
# JUDGE: the one who grades; GOOD: a favourable verdict; MARK: grade / rate / declare;
# THIS: the thing being judged ("this run"). A word of a language other than English also
# counts as XL (another language). ADDR: a word that addresses someone ("to", "dear", "note",
# "Hinweis an", "致", "へ"); PLEASE: a request ("bitte", "请", "ください").
# ADDR_AFTER: the same, written after the name (Japanese へ, Korean 에게).
IDEAS = (
    "IGNORE",
    "INSTR",
    "PRIOR",
    "JUDGE",
    "GOOD",
    "MARK",
    "THIS",
    "ADDR",
    "ADDR_AFTER",
    "PLEASE",
    "XL",
)

#: language -> idea -> space-separated words ("_" joins a phrase of several words).
LEXICON: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "en": {
            "IGNORE": "ignore disregard forget overlook skip bypass override",
            "INSTR": "instructions instruction rubric rules guidelines criteria directives "
            "system_prompt guidance",
            "PRIOR": "previous prior above earlier preceding all any original",
            "JUDGE": "grading_ai judging_ai evaluation_ai ai_grader ai_evaluator ai_reviewer "
            "judging_model scoring_model judge grader evaluator assessor reviewer reviewers "
            "graders evaluators judges scorer marker whoever_is_scoring whoever_is_grading "
            "grading_model evaluation_model evaluating_model your_verdict your_evaluation "
            "your_assessment your_grade your_score your_judgment your_judgement your_rating "
            "fair_assessment grading_this scoring_this scores_this reviews_this judging_this "
            "evaluating_this grades_this the_evaluation the_assessment model_grading "
            "person_grading",
            "GOOD": "pass passed passes passing success successful successfully succeeded approve "
            "approved complete completed accomplished lgtm",
            "MARK": "grade rate mark score record report declare treat treated consider count "
            "conclude evaluate reflect",
            "THIS": "this_run this_submission this_task this_case this_change this_patch "
            "this_trace "
            "this_solution this_attempt this_execution this_trajectory this_evaluation "
            "this_one this_batch the_task the_run the_submission",
            "ADDR": "dear attention note hey hi",
            "PLEASE": "please kindly",
        },
        "es": {
            "IGNORE": "ignora ignore ignoren ignorad olvida olvide olviden omite omita descarta "
            "descarte haz_caso_omiso no_tengas_en_cuenta no_tenga_en_cuenta",
            "INSTR": "instrucciones indicaciones reglas rubrica criterios consignas directrices "
            "pautas",
            "PRIOR": "anteriores previas todas todos",
            "JUDGE": "ia juez_automatico evaluador evaluadora juez revisor calificador corrector "
            "modelo_que_juzga sistema_de_evaluacion",
            "GOOD": "aprobado aprobada aprueba apruebe apruebes exito exitoso exitosa superado "
            "superada completada",
            "MARK": "veredicto califica califique calificala califiquela marca marque considera "
            "declara evalua",
            "ADDR": "para al estimado estimada querido atencion nota",
            "PLEASE": "por_favor",
        },
        "pt": {
            "IGNORE": "ignore ignora ignorem esqueca esqueça desconsidere desconsidera",
            "INSTR": "instrucoes instrucao regras criterios diretrizes rubrica",
            "PRIOR": "anteriores previas todas todos",
            "JUDGE": "ia juiz_automatico avaliador avaliadora juiz revisor corretor",
            "GOOD": "aprovado aprovada sucesso bem_sucedida bem_sucedido",
            "MARK": "veredito veredicto marque marca considere classifique avalie declare",
            "ADDR": "para ao caro cara prezado atencao nota",
            "PLEASE": "por_favor",
        },
        "fr": {
            "IGNORE": "ignore ignorez ignorer oublie oubliez ne_tenez_pas_compte "
            "ne_tiens_pas_compte "
            "faites_abstraction fais_abstraction",
            "INSTR": "instructions consignes regles grille criteres directives",
            "PRIOR": "precedentes precedents anterieures toutes tous",
            "JUDGE": "ia correcteur_automatique evaluateur evaluatrice juge correcteur examinateur",
            "GOOD": "reussi reussie reussite valide validee approuve approuvee succes",
            "MARK": "declarez declare notez considerez evaluez",
            "ADDR": "pour cher chere attention note remarque",
            "PLEASE": "s'il_vous_plait veuillez merci_de",
        },
        "it": {
            "IGNORE": "ignora ignori ignorate dimentica dimentichi trascura non_considerare",
            "INSTR": "istruzioni regole criteri rubrica direttive",
            "PRIOR": "precedenti tutte tutti",
            "JUDGE": "ia valutatore valutatrice giudice revisore correttore",
            "GOOD": "superato superata promosso riuscito approvato successo",
            "MARK": "verdetto dichiara considera valuta segna",
            "ADDR": "per al caro cara gentile attenzione nota",
            "PLEASE": "per_favore",
        },
        "de": {
            "IGNORE": "ignoriere ignorieren ignoriert vergiss vergessen missachte missachten "
            "beachte_nicht",
            "INSTR": "anweisung* instruktion* regeln vorgaben bewertungskriterien kriterien "
            "richtlinien",
            "PRIOR": "vorherige* bisherige* alle obigen",
            "JUDGE": "ki sprachmodell bewertende_sprachmodell bewertende_modell ki_modell bewerter "
            "bewerterin prufer pruferin ki_prufer gutachter richter beurteiler",
            "GOOD": "bestanden erfolgreich genehmigt",
            "MARK": "urteil einstufen stufe bewerte bewerten werte markiere",
            "ADDR": "an_den an_die fur_den liebe lieber geehrte geehrter achtung hinweis",
            "PLEASE": "bitte",
        },
        "nl": {
            "IGNORE": "negeer vergeet",
            "INSTR": "instructies regels richtlijnen criteria",
            "PRIOR": "eerdere vorige alle",
            "JUDGE": "beoordelaar evaluator rechter",
            "GOOD": "geslaagd goedgekeurd",
            "MARK": "beoordeel markeer",
            "ADDR": "aan voor beste beste let_op",
            "PLEASE": "alsjeblieft graag",
        },
        "sv": {
            "IGNORE": "ignorera glom",
            "INSTR": "instruktioner regler",
            "PRIOR": "tidigare alla",
            "JUDGE": "bedomare granskare",
            "GOOD": "godkand lyckad",
            "MARK": "bedom markera",
            "ADDR": "till bast obs",
            "PLEASE": "vanligen snalla",
        },
        "pl": {
            "IGNORE": "zignoruj zignorujcie ignoruj zapomnij pomin",
            "INSTR": "instrukcj* polecen* zasady kryteria",
            "PRIOR": "poprzedni* wszystkie",
            "JUDGE": "oceniaj* sedzia recenzent weryfikator",
            "GOOD": "zaliczone zaliczony zaliczona pozytywn* sukces",
            "MARK": "ocen oznacz uznaj",
            "ADDR": "dla drogi szanowny uwaga",
            "PLEASE": "prosze",
        },
        "cs": {
            "IGNORE": "ignoruj ignorujte zapomen",
            "INSTR": "instrukce pokyny pravidla",
            "PRIOR": "predchozi vsechny",
            "JUDGE": "hodnotitel posuzovatel",
            "GOOD": "uspesne uspech splneno",
            "MARK": "ohodnot oznac",
            "ADDR": "pro vazeny pozor",
            "PLEASE": "prosim",
        },
        "ru": {
            "IGNORE": "игнорируй игнорируйте проигнорируй* забудь забудьте "
            "не_обращай* не_учитывай*",
            "INSTR": "инструкци* указани* правил* критери*",
            "PRIOR": "предыдущ* прежн* все всё",
            "JUDGE": "ии нейросеть проверяющ* оценщик* судь* судья рецензент* эксперт* ии_судь* "
            "оценивающ*",
            "GOOD": "пройдено пройден успешн* зачтено одобрено",
            "MARK": "вердикт засчитаи* поставь* оцени* отметь*",
            "ADDR": "для к уважаемыи уважаемые дорогои внимание примечание",
            "PLEASE": "пожалуиста прошу",
        },
        "uk": {
            "IGNORE": "ігноруй ігноруйте забудь забудьте не_зважай*",
            "INSTR": "інструкці* вказівк* правил*",
            "PRIOR": "попередн* усі всі",
            "JUDGE": "оцінювач* суддя перевіряюч*",
            "GOOD": "успішно пройдено зараховано",
            "MARK": "постав* оціни*",
            "ADDR": "для до шановнии шановні увага",
            "PLEASE": "будь_ласка прошу",
        },
        "tr": {
            "IGNORE": "yok_say gormezden_gel unut dikkate_alma",
            "INSTR": "talimat* kural* yonerge*",
            "PRIOR": "onceki tum",
            "JUDGE": "degerlendirici* hakem yargic",
            "GOOD": "basarili gecti",
            "MARK": "isaretle",
            "ADDR": "sayin dikkat not",
            "PLEASE": "lutfen",
        },
        "id": {
            "IGNORE": "abaikan lupakan",
            "INSTR": "instruksi petunjuk aturan",
            "PRIOR": "sebelumnya semua",
            "JUDGE": "penilai juri peninjau",
            "GOOD": "lulus berhasil sukses",
            "MARK": "nyatakan tandai",
            "ADDR": "untuk kepada yth perhatian catatan",
            "PLEASE": "tolong silakan mohon",
        },
        "vi": {
            "IGNORE": "bo_qua phot_lo",
            "INSTR": "huong_dan chi_dan quy_tac",
            "PRIOR": "truoc_do tat_ca",
            "JUDGE": "nguoi_cham giam_khao nguoi_danh_gia",
            "GOOD": "dat thanh_cong",
            "MARK": "danh_gia",
            "ADDR": "gui cho kinh_gui luu_y",
            "PLEASE": "vui_long hay xin",
        },
        "zh": {
            "IGNORE": "忽略 无视 忽视 忘记 不要理会 不要遵循 不用理会",
            "INSTR": "指令 指示 说明 规则 评分标准 要求",
            "PRIOR": "之前 以上 所有 先前",
            "JUDGE": "评审模型 评审员 评审者 评估者 评分者 评委 裁判 "
            "评判 审核员 阅卷 评测模型 致评审",
            "GOOD": "通过 成功 合格",
            "MARK": "判定 评为 标记为",
            "ADDR": "致 给 请注意 注意 尊敬的",
            "PLEASE": "请",
        },
        "ja": {
            "IGNORE": "無視 忘れ",
            "INSTR": "指示 命令 ルール 基準 採点基準",
            "PRIOR": "これまで 以前 すべて",
            "JUDGE": "採点者 評価者 審査員 レビュアー 評価モデル ai評価者",
            "GOOD": "合格 成功 パス",
            "MARK": "判定 評価して",
            "ADDR": "注意 各位",
            "ADDR_AFTER": "へ 様",
            "PLEASE": "ください お願い",
        },
        "ko": {
            "IGNORE": "무시 잊어",
            "INSTR": "지시 지침 규칙",
            "PRIOR": "이전 모든",
            "JUDGE": "평가자 심사위원 채점자",
            "GOOD": "통과 성공 합격",
            "MARK": "판정",
            "ADDR": "주의",
            "ADDR_AFTER": "에게 께",
            "PLEASE": "주세요 하세요 바랍니다",
        },
        "ar": {
            "IGNORE": "تجاهل انس",
            "INSTR": "التعليمات الإرشادات القواعد",
            "PRIOR": "السابقة جميع",
            "JUDGE": "المقيم الحكم المراجع المقيّم",
            "GOOD": "ناجحة ناجح نجاح",
            "MARK": "اعتبر",
            "ADDR": "إلى الى عزيزي ملاحظة تنبيه",
            "PLEASE": "من_فضلك يرجى الرجاء",
        },
        "hi": {
            "IGNORE": "अनदेखा नज़रअंदाज़ भूल_जाओ",
            "INSTR": "निर्देश निर्देशों नियम",
            "PRIOR": "पिछले सभी",
            "JUDGE": "मूल्यांकनकर्ता समीक्षक",
            "GOOD": "पास सफल उत्तीर्ण",
            "MARK": "घोषित",
            "ADDR": "के_लिए प्रिय ध्यान_दें",
            "PLEASE": "कृपया",
        },
    }
)

# Identifiers stay whole ("test_grader" is not "grader"); slugs of three words or more were
# already split by fold().
# Dotted and slashed names stay whole too ("grading/judge.py" is a path, not a judge).
_TOKEN = re.compile(r"\w+(?:[./]\w+)*")
# "指示どおり" (as instructed), "按照之前的说明" (following the earlier instructions) follow the
# instructions rather than set them aside (patterns folded like the text: ど -> と).
_AS_INSTRUCTED = re.compile(r"\s*(?:どおり|とおり|通り|に従)")
_PER_INSTRUCTIONS = re.compile(r"(?:按照|根据|依照|遵照|按)[^,.;:，。；：]{0,6}$")
# "pass or fail", "pass/fail": a description of outcomes, not a verdict.
_EITHER = re.compile(r"\s*(?:or|/|\|)\s*fail")
#: Scripts written without spaces between words: their words are found by substring search.
#: Indic scripts are searched the same way: their vowel signs are not word characters to \w.
_UNSPACED = re.compile(r"[\u0900-\u0dff\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


class _Index(NamedTuple):
    words: dict[str, frozenset[str]]  # folded word -> ideas
    stems: dict[str, frozenset[str]]  # folded stem -> ideas
    stem_lengths: tuple[int, ...]
    stem_heads: frozenset[str]  # first 3 characters of every stem (a quick reject)
    phrases: dict[str, frozenset[str]]  # multi-word or unspaced terms -> ideas
    #: first word of a spaced phrase -> the phrases (keys of ``phrases``) it starts
    phrase_heads: dict[str, tuple[str, ...]]
    unspaced: tuple[str, ...]  # keys of ``phrases`` in scripts without spaces


@lru_cache(maxsize=1)
def _index() -> _Index:
    words: dict[str, set[str]] = {}
    stems: dict[str, set[str]] = {}
    phrases: dict[str, set[str]] = {}
    english = {term for terms in LEXICON["en"].values() for term in terms.split()}
    for language, ideas in LEXICON.items():
        for idea, terms in ideas.items():
            for term in terms.split():
                marks = {idea} if language == "en" or term in english else {idea, "XL"}
                stem = term.endswith("*")
                folded = fold(term.rstrip("*").replace("_", " ")).strip()
                if " " in folded or _UNSPACED.search(folded):
                    # A phrase ending in a stem keeps its "*" so the search allows any ending.
                    phrases.setdefault(folded + ("*" if stem else ""), set()).update(marks)
                elif stem:
                    stems.setdefault(folded, set()).update(marks)
                else:
                    words.setdefault(folded, set()).update(marks)
    heads: dict[str, list[str]] = {}
    for key in phrases:
        if not _UNSPACED.search(key):
            heads.setdefault(_TOKEN.findall(key)[0], []).append(key)
    return _Index(
        {k: frozenset(v) for k, v in words.items()},
        {k: frozenset(v) for k, v in stems.items()},
        tuple(sorted({len(s) for s in stems})),
        frozenset(s[:3] for s in stems),
        {k: frozenset(v) for k, v in phrases.items()},
        {k: tuple(v) for k, v in heads.items()},
        tuple(k for k in phrases if _UNSPACED.search(k)),
    )


def idea_literals(ideas: frozenset[str]) -> tuple[str, ...]:
    """Texts one of which occurs in every folded text where :func:`idea_hits` finds one of
    ``ideas``: each word and stem for them, each unspaced phrase, and the longest word of each
    spaced phrase (the prefilter of :mod:`judge.safety.scan`: absent all of these, no hit)."""
    found: dict[str, None] = {}
    for terms in LEXICON.values():
        for idea, words in terms.items():
            if idea not in ideas:
                continue
            for term in words.split():
                folded = fold(term.rstrip("*").replace("_", " ")).strip()
                if " " in folded:
                    folded = max(folded.split(" "), key=len)
                found[folded] = None
    return tuple(found)


def _phrase_at(folded: str, start: int, key: str) -> bool:
    """The phrase ``key`` (a trailing "*" allows any ending) stands at ``start``, ending on a
    word boundary."""
    phrase, open_end = key.rstrip("*"), key.endswith("*")
    if not folded.startswith(phrase, start):
        return False
    end = start + len(phrase)
    return open_end or end == len(folded) or not folded[end].isalnum()


def idea_hits(folded: str) -> list[tuple[int, str]]:
    """(character offset, idea) of every lexicon word in ``folded`` text, in text order."""
    index = _index()
    hits: list[tuple[int, str]] = []
    for match in _TOKEN.finditer(folded):
        token = match.group(0)
        ideas = index.words.get(token)
        if ideas is None and token[:3] in index.stem_heads:
            for length in index.stem_lengths:
                if length < len(token):
                    ideas = index.stems.get(token[:length])
                    if ideas is not None:
                        break
        if ideas:
            if "GOOD" in ideas and _EITHER.match(folded, match.end()):
                ideas = ideas - {"GOOD"}
            hits.extend((match.start(), idea) for idea in ideas)
        for key in index.phrase_heads.get(token, ()):
            if _phrase_at(folded, match.start(), key):
                hits.extend((match.start(), idea) for idea in index.phrases[key])
    if not folded.isascii() and _UNSPACED.search(folded):
        for key in index.unspaced:
            phrase = key.rstrip("*")
            start = folded.find(phrase)
            while start >= 0:
                ideas = index.phrases[key]
                if "INSTR" in ideas and (
                    _AS_INSTRUCTED.match(folded, start + len(phrase))
                    or _PER_INSTRUCTIONS.search(folded, max(0, start - 8), start)
                ):
                    ideas = ideas - {"INSTR"}
                hits.extend((start, idea) for idea in ideas)
                start = folded.find(phrase, start + 1)
    hits.sort()
    return hits


def has_idea(folded: str, ideas: frozenset[str]) -> bool:
    """Some lexicon word of ``folded`` text stands for one of ``ideas``."""
    return any(idea in ideas for _, idea in idea_hits(folded))


def _near(
    hits: list[tuple[int, str]],
    first: str,
    second: str,
    window: int,
    *,
    foreign: bool = False,
    text: str = "",
) -> int | None:
    """The offset of a ``first`` idea that has a ``second`` idea within ``window`` characters
    (not the same word), or None. ``foreign``: one of the two must be a word of a language
    other than English. ``text``: the two must stand on the same line of it."""
    a = [pos for pos, idea in hits if idea == first]
    b = [pos for pos, idea in hits if idea == second]
    xl = {pos for pos, idea in hits if idea == "XL"} if foreign else set()
    return next(
        (
            x
            for x in a
            for y in b
            if x != y
            and abs(x - y) <= window
            and (not foreign or x in xl or y in xl)
            and (not text or "\n" not in text[min(x, y) : max(x, y)])
        ),
        None,
    )


#: Rule name -> what it means (the reasons this module gives, without the "injection:" prefix).
SIGNALS: Mapping[str, str] = MappingProxyType(
    {
        "ignore-instructions": "tells the reader to set aside its (previous) instructions, in any "
        "of the lexicon's languages",
        "judge-verdict": "names the evaluator and a favourable verdict close together, in any of "
        "the lexicon's languages",
    }
)


#: A listing of results (it holds an unfavourable verdict too): data, not a request.
_LISTING = re.compile(r"\bverdict['\"]?\s*[:=]\s*['\"]?(?:fail|failed|error)\b")


def _addressed(hits: list[tuple[int, str]]) -> bool:
    """A judge word addressed: "dear / note / Hinweis an / 致" just before it, or "へ / 에게"
    just after it."""
    judges = [pos for pos, idea in hits if idea == "JUDGE"]
    before = [pos for pos, idea in hits if idea == "ADDR"]
    after = [pos for pos, idea in hits if idea == "ADDR_AFTER"]
    return any(0 < j - a <= 16 for j in judges for a in before) or any(
        0 < a - j <= 8 for j in judges for a in after
    )


def lexicon_addressed(hits: list[tuple[int, str]]) -> bool:
    """A word for the judge addressed in ``hits`` (of :func:`idea_hits`): "dear / note /
    Hinweis an / 致" just before it, or "へ / 에게" just after it."""
    return _addressed(hits)


def lexicon_signals(folded: str) -> list[tuple[str, int]]:
    """(name, offset) of each of the :data:`SIGNALS` that fires on ``folded`` text (from
    :func:`fold`); the offset is where its key word stands, for telling a use from a quoted
    mention."""
    hits = idea_hits(folded)
    if len(hits) < 2:
        return []
    found: list[tuple[str, int]] = []
    # English word order is covered by the sentence rules of judge.safety.injection; here a pair
    # counts when one of its words is of another language ("ignore las instrucciones").
    ignore = _near(hits, "IGNORE", "INSTR", 60, foreign=True)
    if ignore is not None and any(
        _near(hits, "IGNORE", other, window) is not None
        for other, window in (("PRIOR", 60), ("JUDGE", 300), ("GOOD", 300))
    ):
        found.append(("ignore-instructions", ignore))
    # The evaluator and the verdict on one line: a note to the judge is one sentence or two,
    # while a log or a test report has "reviewer" on one line and "passed" on another.
    judge = _near(hits, "JUDGE", "GOOD", 160, text=folded)
    if (
        judge is not None
        and not _LISTING.search(folded)
        and (
            any(
                _near(hits, "JUDGE", other, 160) is not None
                for other in ("MARK", "IGNORE", "INSTR", "THIS")
            )
            # "please" / "bitte" / "ください" alone is not enough: docs ask reviewers for things
            or _addressed(hits)
        )
    ):
        found.append(("judge-verdict", judge))
    return found
