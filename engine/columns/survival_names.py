"""How researchers name survival columns: the vocabulary, where each entry came from, and a
ranking of a table's columns as the follow-up time and the event indicator.

Why by hand: no library guesses survival roles from a header. The vocabulary below is taken from
real public survival tables and the documentation of the tools clinicians use, not invented:

========================  =============================================================  ======
name (token or pattern)   seen in (package: table, or documentation)                     role
========================  =============================================================  ======
time, status              R survival: lung, veteran, colon, kidney, aml, diabetic,        both
                          stanford2, nafld1; lifelines: lung
futime, fustat            R survival: ovarian, jasa (Stanford heart)                      both
futime, death             R survival: flchain, mgus, mgus2, myeloid; scikit-survival:     both
                          flchain
ptime, pstat              R survival: mgus2 (time to progression, progression status)     both
rtime, recur              R survival: rotterdam (relapse-free time, recurrence)           both
dtime, death              R survival: rotterdam                                           both
rfstime                   R survival: gbsg                                                time
edrel, rel                R survival: nwtco (time to relapse, relapse)                    both
week(s), arrest           lifelines / R carData: rossi                                    both
T, E                      lifelines: waltons, regression                                  both
duration, observed        lifelines: dd (democracy duration); pycox: metabric, support    both
diff_days, observed       lifelines: canadian_senators                                    both
t, status                 lifelines: leukemia                                             both
Time, Censor              lifelines: lymphoma (Censor 1 = death)                          both
T, D                      lifelines: multicenter_aids_cohort                              both
time, event               lifelines: g3; R penalized: nki70                               both
time, cens                lifelines / TH.data: gbsg2 (cens 1 = event)                     both
days, cens                speff2trial: ACTG175 (cens 1 = event)                           both
lenfol, fstat             scikit-survival / Hosmer & Lemeshow: whas500, whas100           both
Survival_in_days, Status  scikit-survival: veterans_lung_cancer (Status boolean)          both
time, censor              scikit-survival / Hosmer & Lemeshow: aids (actg320), uis,       both
                          hmohiv (censor 1 = event)
SurvTime, Censor          SAS/STAT PROC PHREG and LIFETEST examples: VALung               both
                          (``SurvTime*Censor(1)``: 1 = censored)
Time, VStatus             SAS/STAT PROC PHREG example: Myeloma (``Time*VStatus(0)``)     both
studytime, died           Stata: cancer.dta (``stset studytime, failure(died)``)          both
time, DEATH_EVENT         UCI heart failure clinical records (Chicco & Jurman 2020)       both
OS_MONTHS, OS_STATUS      cBioPortal / TCGA, METABRIC (also DFS_*, PFS_*)                 both
d.time, death             Hmisc: support2                                                 both
TIMEDTH, DEATH            riskCommunicator: framingham (also TIMECVD / CVD)               both
ttr, relapse              asaur: pharmacoSmoking (time to relapse)                        both
OS, Death; RFS,           asaur: hepatoCellular                                           both
Recurrence
time, delta               R KMsurv: tongue, larynx (delta 1 = death)                      both
efs, ttp, dfs, pfs, os,   the standard trial end points (event-free survival, time to      time
tte                       progression, disease-free, progression-free, overall survival,
                          time to event) as used in cBioPortal and trial reports
vital_status              cBioPortal / TCGA clinical files, SEER                          event
OS, OS.time; DSS,         TCGA Pan-Cancer Clinical Data Resource (Liu et al. 2018, Cell   both
DSS.time; DFI, DFI.time;  173:400), as UCSC Xena serves it: times in days, each end point
PFI, PFI.time             a 0/1 column named like it (1 = the event)
PFStime, PFSevent;        Genentech phase1b: TTEdata                                      both
OStime, OSevent
tt_pfs, ev_pfs            bonsaiforest: simul_pfs (ev_pfs 1 = event)                      both
tdeath, cdeath;           winRatioAnalysis: dat (cdeath 1 = death, cprog progression)     both
tprogression, cprog
srv, srvstat; rel,        mstate: EBMT year of relapse (relstat 1 = relapsed)             both
relstat
t.rfs, e.rfs; t.dmfs,     Bioconductor breastCancerVDX / genefu (relapse-free, distant    both
e.dmfs; t.os, e.os        metastasis-free and overall survival)
progressed, relapsed,     the indicators above in the past tense, as headers say them:    event
recurred                  mstate relstat "1 = relapsed", nsm3data hodgkins relapse
                          "whether the patient relapsed", cBioPortal DFS_STATUS
                          "1:Recurred/Progressed"
CNSR                      CDISC ADaM ADTTE (with AVAL; CNSR 1 = censored), e.g. PHUSE     event
                          Wonderful Wednesdays 2020-04-08: a censoring name, 1 = censored
========================  =============================================================  ======

R's ``Surv(time, event)`` documents the event as 0/1, TRUE/FALSE or 1/2 (2 = event); SAS names
the censoring value in parentheses (``Time*Status(0)``); Stata's ``stset ..., failure(var)``
takes any non-zero value as the event. A column named like a censoring indicator (``cens``,
``censor``) means 1 = event in most public tables above (gbsg2, ACTG175, aids, uis, hmohiv,
lymphoma) but 1 = censored in SAS's examples (VALung): such a name is never used silently; it is
asked about, with "1 means the event happened" preselected (``censored``, ``is_censored`` and
CDISC's ``CNSR``: "1 means censored" preselected).

References: R survival package reference manual (``Surv``, datasets); SAS/STAT User's Guide,
PROC PHREG and PROC LIFETEST examples; Stata manual ``[ST] stset``; Hosmer, Lemeshow & May (2008)
Applied Survival Analysis; scikit-survival ``sksurv.datasets``; lifelines ``lifelines.datasets``.

Example:
    >>> time_score("OS_MONTHS"), time_score("rfstime"), time_score("age")
    (3, 3, 0)
    >>> event_score("DEATH_EVENT"), event_score("fustat"), event_score("cens"), event_score("sbp")
    (3, 3, 1, 0)
    >>> time_score("OS.time"), time_score("PFI.time"), event_score("OS"), event_score("relapsed")
    (3, 3, 3, 3)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from engine.files.names import name_tokens

# Whole names (lower case) that mean a follow-up time.
TIME_WHOLE = frozenset(
    (
        "time futime fu_time fut stime survtime surv_time studytime lenfol lenfollow rfstime dtime "
        "rtime ptime etime edrel ttr ttp tte efs dfs pfs rfs os dss t days weeks week months month "
        "years duration diff_days d.time timedth timecvd timemi timechd timestrk followup "
        "follow_up fu survival survival_time time_to_event"
    ).split()
)
# Tokens that make a name a time when it also holds an end-point or survival word, or alone.
TIME_UNITS = frozenset(
    "time days day weeks week months month years yrs yr mo mos wk wks dys".split()
)
END_POINTS = frozenset(
    (
        "os pfs dfs efs rfs dss ttp tte ttr survival surv followup fu death event relapse "
        "recurrence progression censor lenfol"
    ).split()
)
TIME_PREFIXES = ("followup", "follow_up", "follow-up", "time_to", "timeto", "survival", "surv_")

# Whole names that mean "the event happened" (1 = event).
EVENT_WHOLE = frozenset(
    (
        "event status dead death died arrest relapse rel recur recurrence progression prog fail "
        "failure failed fstat fustat pstat dstat vstatus vital_status vitalstatus observed e d "
        "delta death_event deceased mortality mort outcome_event cvd chd hospmi os_status "
        "pfs_status dfs_status efs_status rfs_status"
    ).split()
)
EVENT_TOKENS = frozenset(
    (
        "event status death dead died deceased relapse recurrence recur progression fail failure "
        "stat mortality vital"
    ).split()
)
# The relapse, progression and TCGA forms (issue 44; the table's last rows): times, events and
# the end points a time may be joined to. A 0/1 column can never be a time (it has two values),
# so a name such as ``OS`` is an event when its column is 0/1 and a time when it holds days.
TIME_ADDED = frozenset(
    "dfi pfi srv rel ostime pfstime tt_pfs tdeath tprogression t.rfs t.dmfs t.os".split()
)
EVENT_ADDED = frozenset(
    "os dss dfi pfi osevent pfsevent ev_pfs cdeath cprog srvstat relstat e.rfs e.dmfs e.os "
    "progressed relapsed recurred".split()
)
EVENT_TOKENS_ADDED = frozenset({"progressed", "relapsed", "recurred"})
END_POINTS_ADDED = frozenset({"dfi", "pfi", "dmfs"})
# Censoring-looking names: the direction of the coding is asked about, never assumed.
CENSOR_EVENT_LIKELY = frozenset({"cens", "censor", "censoring_indicator"})
CENSOR_REVERSED_LIKELY = ("censored", "is_censored", "iscensored", "censoring", "cnsr")


# Words a status column uses for "the event happened" and for "not (yet)": cBioPortal's
# "0:LIVING" / "1:DECEASED", METABRIC's Living / Deceased, SEER's Alive / Dead, trial files'
# censored / relapsed.
EVENT_WORDS = frozenset(
    (
        "dead deceased died death event relapse relapsed recurred recurrence progressed "
        "progression failure failed progression/death"
    ).split()
)
NO_EVENT_WORDS = frozenset(
    "alive living censored censor event-free diseasefree no none".split()
) | {"no event", "event free", "disease free"}


def event_word_order(values: Sequence[Any]) -> tuple[Any, Any] | None:
    """(the "not yet" value, the event value) for a pair of words such as Living / Deceased or
    "0:LIVING" / "1:DECEASED" (a leading code and colon are ignored); None otherwise.

    Example:
        >>> event_word_order(["1:DECEASED", "0:LIVING"])
        ('0:LIVING', '1:DECEASED')
        >>> event_word_order(["Living", "Deceased"]), event_word_order(["red", "blue"])
        (('Living', 'Deceased'), None)
    """
    if len(values) != 2:
        return None
    words = [re.sub(r"^\s*\d+\s*:\s*", "", str(v)).strip().lower() for v in values]
    present = [w in EVENT_WORDS for w in words]
    absent = [w in NO_EVENT_WORDS for w in words]
    if present == [False, True] and absent[0]:
        return (values[0], values[1])
    if present == [True, False] and absent[1]:
        return (values[1], values[0])
    return None


def _low(name: str) -> str:
    return str(name).strip().lower().replace(" ", "_")


def time_score(name: str) -> int:
    """How strongly a header says "follow-up time": 3 a name from the table above or a time
    unit joined to an end point (``pfs_months``, ``OS_MONTHS``, ``time_to_relapse``), 2 a time
    unit or ``*_time`` alone (``weeks``, ``t_obs_time``), 0 nothing."""
    low, tokens = _low(name), name_tokens(name)
    if low in TIME_WHOLE or low in TIME_ADDED or low.startswith(TIME_PREFIXES):
        return 3
    if set(tokens) & TIME_UNITS and set(tokens) & (END_POINTS | END_POINTS_ADDED):
        return 3
    if tokens and (tokens[-1] in TIME_UNITS or tokens[0] == "time"):
        return 2
    if any(t.endswith("time") and len(t) > 4 for t in tokens):  # survtime, rfstime, sur_time
        return 2
    return 0


def event_score(name: str) -> int:
    """How strongly a header says "the event happened": 3 a name from the table above, 2 an
    event word within the name (``death_flag``, ``event_type``), 1 a censoring-looking name
    (asked about), 0 nothing."""
    low, tokens = _low(name), name_tokens(name)
    if low in CENSOR_EVENT_LIKELY or low.startswith(CENSOR_REVERSED_LIKELY) or "censor" in low:
        return 1
    if low in EVENT_WHOLE or low in EVENT_ADDED:
        return 3
    if tokens and (set(tokens) & (EVENT_TOKENS | EVENT_TOKENS_ADDED) or tokens[0] == "event"):
        return 2
    return 0


def censoring_reversed(name: str) -> bool | None:
    """For a censoring-looking name, whether 1 most likely means *censored* (``censored``,
    ``is_censored``) rather than the event (``cens``, ``censor``); None for other names.

    Example:
        >>> censoring_reversed("censored"), censoring_reversed("cens"), censoring_reversed("died")
        (True, False, None)
    """
    if event_score(name) != 1:
        return None
    return _low(name).startswith(CENSOR_REVERSED_LIKELY) or "is_cens" in _low(name)


def shared_stem(time: str, event: str) -> bool:
    """Whether a time and an event header share an end-point token (``os_months`` and
    ``os_status``; ``pfs_time`` and ``pfs_event``), the way trial files pair them.

    Example:
        >>> shared_stem("PFS_MONTHS", "PFS_STATUS"), shared_stem("OS_MONTHS", "PFS_STATUS")
        (True, False)
    """
    stems = set(name_tokens(time)) & set(name_tokens(event))
    return bool(stems - TIME_UNITS - {"status", "event"})
