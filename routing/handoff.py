"""Recognising a request for a person (issue #15, docs/routing.md "Asking for a person").

The ``handoff-request`` rule alone missed phrasings it was not written for and fired on
messages that mention a person without asking for one ("I don't need a human", "what
hours is your support team online"). Three parts decide together:

- **vetoes**: a clause that declines a person ("no need for an agent", "不用转人工"),
  asks what the bot is or remarks on it ("are you a human?", "你说话像真人"), asks for
  contact details or opening hours (or whether someone works on Sundays), asks about
  the queue or the process ("how long is the wait for an agent", "什么情况下会转人工",
  a question after a condition), asks whether one has to contact someone, says the
  shopper is human ("prove i'm not a robot"), reports a person's words or a wait from
  before or compares the bot with people ("上次人工客服答应…"), or names a contact person
  as a field, is no request; the rest of the message still counts ("are you a bot? I
  want a person" is one);
- **the rule** (the router's rules of the ``handoff`` intent, admin-editable); asking
  for a manager or supervisor is asking for a person (session 9);
- **a scorer**: logistic regression over TF-IDF character/word n-grams and, for
  English, the router's MiniLM sentence embedding, trained on
  ``seed_data/handoff_examples.tsv``, every handoff set whose errors have been read
  (session 10) and the seed intents' examples that mention a person (all of them other
  requests). It catches the requests the rule has no pattern for.

The rule and the scorer decide together at the handoff rules' priority, before the
complaint rules (session 10); a rule's match counts only when the scorer gives it at
least ``GATE`` (session 11). A message with no word for a person, a team, support, a
bot or a callback never reaches the scorer (``handoff_cue``), so most messages cost one
regex. The threshold, the gate and the regularisation were chosen by the honest
cross-validation over the blind sets (``manage.py handoff_cv --honest``,
eval/handoff_cv.py; docs/routing.md "Handoff, session 11").
Sync and CPU-bound like the rest of the router: call it off the event loop.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import math
import os
import pickle
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import sklearn
from django.conf import settings
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion

from routing.classifier import TfidfLookup, tfidf_dot, tfidf_lookup
from routing.normalise import text_normalise

logger = logging.getLogger(__name__)

EXAMPLES_FILE = Path(__file__).resolve().parent / "seed_data" / "handoff_examples.tsv"

# Chosen by the honest cross-validation (session 11, eval/handoff_cv.py, docs/routing.md
# "Handoff, session 11"): the best accuracy with at most 2% false handoffs over the blind
# sets, each measured with the vetoes, rule and training of its time; the same point with
# embeddings on and off (0.931 / 1.4% and 0.930 / 1.9%). Session 10's 0.4 / 0.6 and no
# gate came from a cross-validation that had the vetoes fitted to every fold; honestly
# measured they gave 7.4% false handoffs (v4, blind: 7.3%).
THRESHOLD = 0.8
THRESHOLD_NO_EMBEDDINGS = 0.8
# The score a handoff rule's match needs to count. Most honest false handoffs were the
# rule's, on messages the scorer scored low (0.0-0.4): with 0.5 a match counts only when
# the scorer half agrees (session 10 measured no gain, on folds whose vetoes had been
# written from their own errors).
GATE = 0.5
# Regularisation: 10 (was 100) by the same cross-validation, at every gate and threshold
# with a gate (0.931 / 1.85% nested, against 0.929 / 3.3%).
_C = 10.0
_EMBEDDING_WEIGHT = 2.0

_DIGITS_RE = re.compile(r"\d+")

# Any word for a person, a team, support or a bot (EN), or 人/客服/店员... (ZH). A
# request for a person names one; checked on every request in the examples and the
# dev set (tests/routing/test_handoff.py).
_CUE_RE = re.compile(
    r"\b(?:humans?|person|persons|people|agents?|reps?|representatives?|staff|someone|"
    r"somebody|anyone|anybody|operators?|managers?|supervisors?|boss|owners?|colleagues?|"
    r"team|employees?|support|service|care|real|live|living|actual|bots?|robots?|"
    r"automated|transfer\w*|escalat\w*|specialists?|call|contact|reach|talk|speak|chat|"
    # Session 10: callbacks, a department, someone in charge, a misspelt person.
    r"callback|ring|phone|telephone|e-?mail|department|dept|sales|billing|accounts|"
    r"refunds|returns|warranty|technical|in charge|senior|queue|line|whoever|"
    r"hu\w{2,4}|repr?s\w*|agn\w*|agen\w*|opera\w*"
    r")\b|人|客服|店员|员工|职员|专员|掌柜|小二|经理|主管|领导|老板|店长|负责人|售后|机器|"
    r"电话|回电|打给我|联系我|部门|同事|销售|财务|技术支持|管事|说了算|拍板|值班|微信"
)

# --- vetoes ---------------------------------------------------------------------------

_PERSON = (
    r"(?:humans?|person|people|agents?|reps?|representatives?|staff|someone|somebody|"
    r"anyone|anybody|operators?|managers?|supervisors?|employees?|colleagues?|team|"
    r"customer (?:service|support|care)|support|live chat|transfer\w*|escalat\w*|"
    r"connect\w*|send me|pass me|hand me over)"
)
_BOT = r"(?:bots?|robots?|machines?|ai|automated|automatic)"
# The people who work at the shop, named as a group (questions about them).
_STAFF = (
    r"(?:humans?|people|persons?|staff(?: members?)?|agents?|reps?|representatives?|"
    r"employees?|operators?|workers?|anyone|someone|somebody|team(?: members?)?|"
    r"(?:customer )?(?:service|support|care|help ?desk)(?: team| staff| agents?| reps?)?)"
)
# Declining a person: the negation, then within the same clause a person (or a
# transfer) and no bot before it ("I don't want a robot I want a human" asks).
_NEGATION_RE = re.compile(
    r"\b(?:no need|(?:do|does|did)(?:n'?t| not) (?:need|want|wanna|have to)|don'?t (?:need|"
    r"want|wanna|have to|transfer|send|connect|pass|put|hand|escalate)|dont (?:need|want|"
    r"wanna|have to|transfer|send|connect)|(?:please|pls) don'?t|not necessary|never ?mind|"
    r"without|no thanks|forget(?: about)?)\b(?P<scope>[^,.;!?]{0,40})"
)
_NO_PERSON_NEEDED_RE = re.compile(
    rf"\bno {_PERSON} (?:needed|necessary|required)\b|\bno (?:need|thanks)\b[^,.;!?]{{0,6}}$|"
    r"\b(?:cancel|stop|call off) (?:the |my )?(?:transfer|escalation|handoff|callback)\b"
)
_PERSON_RE = re.compile(rf"\b{_PERSON}\b")
_BOT_RE = re.compile(rf"\b{_BOT}\b")
_ZH_NEGATION_RE = re.compile(
    r"(?:不用|不需要|不必|无需|没必要|不想|别|不要)(?:再|了)?(?:帮我)?(?:转|找|接|叫|联系)?"
    r"(?:一下)?(?:人工|真人|客服|工作人员|人了|人)|"
    # "不找人工了", "那就不麻烦人工了" (session 10).
    r"不(?:找|转|要|用|叫|等|麻烦)(?:了)?(?:人工|真人|客服|工作人员)|(?:算了|不用了)[^，,。.]{0,4}$"
)
# What the bot is, who writes the replies: a question about the chat, not a request.
_IDENTITY_RE = re.compile(
    rf"\b(?:are|r) (?:you|u)(?: an?| the)?(?: real| actual| live)? (?:humans?|person|{_BOT}|"
    r"agent|real|people)\b|\bam i (?:talking|chatting|speaking|writing)\b|"
    rf"\bis (?:this|it)(?: an?)? (?:{_BOT}|person|human|real person|real)\b|"
    r"\bis (?:a|an|the|this|someone|anyone)(?: real| actual| live)? (?:humans?|person|agent|"
    r"someone) (?:reading|writing|typing|answering|replying|seeing|behind)\b|"
    rf"\b(?:written|typed|answered|sent) by (?:an? )?(?:humans?|person|people|{_BOT})\b|"
    r"\b(?:sound|seem|talk|write|type|reply|respond|answer|chat)s? (?:just |exactly )?like an? "
    r"(?:real )?(?:person|human)\b|\bis (?:a|any) (?:human|person|real person) (?:going to|gonna|"
    r"ever) (?:read|see|check)\b|(?:像|不像)(?:个)?(?:真人|人类|活人|机器人?)|"
    r"(?:只有|全是|都是|全部是)机器人|"
    r"(?:你|您)(?:们)?是(?:不是)?(?:真人|人工|机器人|人还是|ai|人类)|是(?:真人|人工|人)还是机器|"
    r"(?:回复|回答)(?:我)?的是(?:人|真人|机器)|是(?:人工|真人)在(?:回复|回答)|"
    # Who runs or reads the chat ("is this chat run by humans", "do humans read these
    # messages", "who answers these chats"), whether the replies are automatic, and
    # whether the staff are people ("are your support agents real people").
    r"\b(?:is|are) (?:this|these|the|it|you|that)\b[^,.;!?]{0,25}?\b(?:run|staffed|operated|"
    r"monitored|manned|read|answered|handled|powered|written|typed|checked|controlled) by\b|"
    rf"\b(?:run|staffed|operated|manned|powered) by (?:an? )?(?:real )?(?:humans?|people|"
    rf"persons?|staff|agents?|{_BOT})\b|"
    rf"\b(?:do|does|will|would) (?:a |any |real |actual )?{_STAFF}(?: from [\w' ]{{1,20}}?)? "
    r"(?:ever |actually |really |also )?(?:read|see|check|monitor|review|look at|answer) "
    r"(?:these|this|the|those|our) (?:chats?|messages?|conversations?|replies|logs?|"
    r"transcripts?)\b|"
    r"\bwho (?:answers|reads|writes|runs|monitors|is behind|replies to|types|handles) (?:these|"
    r"this|the|my) (?:chats?|messages?|replies|answers|conversations?)\b|"
    r"\b(?:is|are) (?:this|these|it|that|you|the (?:replies|answers|messages))(?: an?)? (?:all )?"
    r"(?:automated|automatic|auto-?generated|canned|scripted|generated)\b|"
    rf"\b(?:are|is) (?:all )?(?:of )?(?:your|the|these|those) (?:\w+ ){{0,2}}?{_STAFF} (?:all |"
    rf"really |actually )?(?:an? )?(?:real |actual )?(?:people|humans?|persons?|{_BOT})\b|"
    r"(?:客服|回复|回答|聊天|对话|这个?)(?:都|也)?(?:是|是不是)(?:不是)?(?:真人|人工|机器人?|ai|"
    r"自动|程序|人还是)|(?:是|是不是)自动(?:回复|回答)|自动(?:回复|回答)(?:吗|嘛|么|的吗)"
)
# Opening hours and contact details: information, not a request to be put through.
_INFO_RE = re.compile(
    r"\b(?:phone number|email address|e-mail address|support email|hotline|what hours|"
    r"which hours|opening hours|business hours|working hours|what time|hours\?)|"
    r"\bwhen (?:do|does|is|are)\b[^,.;!?]{0,40}\b(?:open|close|closed|online|available|"
    r"start|work)\b|"
    r"几点|时间|上班|下班|电话(?:号码|是多少|多少)|邮箱|热线|营业|联系方式|微信|"
    # Phone numbers, email addresses and other channels, asked for rather than a person
    # put through here ("customer service number please", "support email?"); a person
    # asked to call back ("can an agent phone me") is a request and names none of these.
    r"\b(?:phone|telephone|mobile|landline|contact|whatsapp|wechat|fax|helpline|hotline)"
    r"(?: number| no\b| line| details| info\w*| email)|(?<!me )\b(?:by|via) (?:phone|telephone|"
    r"e-?mail|whatsapp|wechat|text)\b|\bwhatsapp\b|\bwechat\b|"
    r"\b(?:team|staff|agents?|shop|store|company)(?:'s|s') (?:e-?mail|number|phone|address)\b|"
    r"\b(?:your|support|service|care|helpline|hotline) (?:e-?mail|phone number|number|"
    r"whatsapp|wechat)\b|\bnumber (?:i|we) (?:can|could) (?:call|ring|phone|text|reach)\b|"
    # Whether someone works on a day or at a time ("is support available on sundays",
    # "周末有客服吗"): opening hours asked another way (session 9).
    r"\b(?:available|working|work|works|open|online|around|on duty|staffed|in)\b (?:on |at |"
    r"during |over |for )?(?:the )?(?:weekends?|saturdays?|sundays?|holidays?|public holidays?|"
    r"bank holidays?|christmas(?: day| break| eve)?|new year'?s?(?: day| eve)?|nights?|evenings?|"
    r"easter|thanksgiving|holiday season)\b|"
    r"(?:周末|周六|周日|礼拜[六天日]|星期[六日天]|节假日|假期|国庆|春节|过年|晚上(?!好)|夜里|半夜|"
    r"凌晨)[^,.;!?，。；！？]{0,8}?(?:有|上班|在线|在吗|值班|营业)"
)
# The shopper saying they are a person, not a bot (a captcha, a blocked checkout):
# "i'm human too", "prove i'm not a robot", "我是真人" (session 9).
_SHOPPER_IS_HUMAN_RE = re.compile(
    r"\b(?:i'?m|i am|im)\b(?: only| just| also| too| a real| an actual)?(?: an?)?(?: real| actual|"
    r" living)? (?:human(?: being)?|person|customer|people)\b(?! (?:please|pls|now)\b)|"
    r"\b(?:i'?m|i am|im) not an? (?:ro)?bot\b|\bprove (?:that )?(?:i'?m|i am|im)\b|"
    r"\b(?:captcha|recaptcha|human verification|verify (?:that )?(?:i'?m|i am))\b|"
    r"\b(?:flagged|marked|detected|blocked|treated) (?:me )?as (?:an? )?(?:ro)?bot\b|"
    r"\bif i'?m (?:an? )?(?:human|robot|bot|person)\b|\b(?:thinks?|says?|said|claims?) (?:that )?"
    r"(?:i'?m|i am) (?:an? )?"
    r"(?:ro)?bot\b|"
    r"我是(?:真人|人类|活人)|我(?:又)?不是机器人?|人机验证|验证(?:我)?是不是机器人|"
    r"(?:说|以为|当成?|认为)我是机器人?|验证码"
)
# Asking whether one has to contact someone, not asking to be put through: "do i
# have to call someone to cancel", "退货需要联系客服吗" (session 9).
_WHETHER_NEEDED_RE = re.compile(
    r"\b(?:do|does|would|will) (?:i|we) (?:need|have|got) to (?:contact|call|ring|phone|e-?mail|"
    r"speak (?:to|with)|talk (?:to|with)|message|reach|ask|go through)\b|"
    r"\b(?:must|should) (?:i|we) (?:contact|call|e-?mail|speak (?:to|with)|talk (?:to|with)|"
    r"ask|reach)\b|\bdo (?:i|we) need an? (?:\w+ )?(?:agent|person|human|rep|staff member)\b|"
    r"\bis it necessary to (?:contact|call|speak|talk)\b|"
    r"(?:需要|要|得|必须|用不用|需不需要|要不要)(?:先)?(?:联系|找|打给|问|通过|经过|转)(?:一下)?"
    r"(?:客服|人工|工作人员|售后)(?:吗|么|嘛|[?？])|(?:需要|要)人工审核"
)
# A person's words or help reported from before, a past wait, or the bot compared with
# people: "the agent i spoke to yesterday promised a refund", "上次人工客服答应给我补发",
# "机器人比人工方便" (session 9). Gives way to an explicit put-through.
_REPORT_OR_OPINION_RE = re.compile(
    rf"\b{_STAFF}\b[^,.;!?]{{0,30}}?\b(?:told|said|promised|gave|sent|emailed|approved|"
    r"confirmed|offered|mentioned|agreed|sorted|fixed|helped|was|were|already)\b|"
    r"\bi (?:already |have already |'ve already |had )?(?:spoke|talked|chatted|spoken|contacted|"
    r"called|emailed)\b[^,.;!?]{0,30}\b(?:yesterday|already|before|last|earlier|ago|"
    r"this morning)\b|"
    r"\bi (?:already|have already|'ve already) (?:spoke|talked|chatted|spoken|contacted|called)\b|"
    r"\blast time\b|"
    r"\b(?:better|faster|quicker|easier|nicer|worse|slower) than (?:waiting for |talking to |"
    r"calling )?(?:an? |the )?(?:humans?|people|agents?|reps?|staff|support|a person)\b|"
    r"\bprefer(?:s|red)? (?:\w+ ){0,2}(?:the |a )?(?:ro)?bots?\b|"
    r"\b(?:ro)?bots? (?:is|are) (?:fine|ok|okay|good|great|better|faster|quicker)\b|"
    r"(?:上次|之前|刚才|刚刚|昨天|前天|上回|以前|已经|早上|上午|下午)[^,.;!?，。；！？]{0,8}?"
    r"(?:人工|客服|工作人员|店员|经理|主管|老板)|"
    # "X说" is "X said", where 跟/和/让/叫/请/找 X 说 asks to talk to X (X may be
    # 真人客服 or 人工客服: the lookbehinds skip that prefix, or "和真人客服说" was vetoed
    # from its 客服).
    r"(?<![跟和让叫请找])(?<![跟和让叫请找]真人)(?<![跟和让叫请找]人工)(?:人工|客服|工作人员|店员|经理|主管|老板|店长)(?:客服)?(?:已经)?"
    r"(?:说(?!话)|答应|告诉|承诺|同意|确认|批准|推荐|让我|叫我)|"
    r"比(?:等)?(?:人工|真人|客服)|(?:机器人|bot)[^,.;!?，。；！？]{0,8}?(?:挺好|也行|方便|不错|就行|挺快)"
)
# A past contact with a wait or an outcome, even through a put-through verb ("上次转人工等了
# 一个小时", "i was transferred last time and waited an hour"): session 10.
_PAST_CONTACT_RE = re.compile(
    r"(?:上次|上回|之前|以前|昨天|前天|刚才)[^,.;!?，。；！？]{0,10}?(?:找|转|联系|打给|打|等)(?:了|过)?"
    r"[^,.;!?，。；！？]{0,3}(?:人工|客服|真人)[^,.;!?，。；！？]{0,12}(?:了|过)|"
    r"\bi was (?:transferred|put through|connected|escalated)\b|"
    r"\b(?:last time|yesterday|before)\b[^,.;!?]{0,40}\b(?:waited|took|was|spent|hung up)\b"
)
# Questions about the queue or what happens on the way to a person, not a request for
# one ("how long is the wait for an agent", "转人工一般要等多久", "what should i have ready
# before contacting support", "什么情况下会转人工", "does the bot pass hard questions to
# staff?"): session 10.
_PROCESS_RE = re.compile(
    r"\bhow (?:long|many)\b[^,.;!?]{0,40}\b(?:wait|waiting|queue|line|ahead|take)\b|"
    r"\b(?:wait|queue) (?:time|times)\b|\bbefore (?:i |we )?(?:contact|talk|speak|call|reach|chat)"
    r"\w*|\bwhat happens (?:if|when)\b|\bhow does (?:the )?(?:transfer|handoff|escalation)\b|"
    r"\b(?:does|do|will|would|can) (?:the |this |your )?(?:bot|chatbot|ai|assistant|system|it)\b"
    r"[^,.;!?]{0,20}\b(?:pass|send|transfer|hand|escalate|forward)\w*\b|"
    r"(?:等|排队)[^,.;!?，。；！？]{0,6}?(?:多久|多长时间|几分钟|多少人|的人多|人多)|要等多久|排队(?:的)?人多|"
    r"(?:之前|前)(?:要|需要|得)?(?:准备|提供|带)|什么(?:情况|时候)(?:下)?(?:会|才|能)?(?:转|接|找)|"
    r"会不会(?:帮我)?(?:转|接)"
)
# After a condition ("if you can't answer,", "如果你回答不了，"), a question about what will
# happen ("will you send me to a person?", "会帮我转人工吗"): a process question.
_CONDITION_RE = re.compile(r"^(?:if|what if|in case|如果|要是|假如|万一)|的话[,，]?$")
_WILL_QUESTION_RE = re.compile(
    r"^(?:then )?(?:will|would|do|does|can|could) (?:you|i|it|they|someone)\b.*[?？]$|"
    r"^(?:那)?(?:你|您)?(?:们)?(?:会|能|可以)[^,.;!?，。；！？]*(?:吗|么|嘛)[?？]?$"
)
# A contact person as a field or a role (a form, an account, an order), not someone to
# talk to: "the checkout asks for a contact person" (session 10).
_ROLE_RE = re.compile(r"\bcontact (?:person|persons|people|name)\b|联系人|对接人")
# Asking to be called, written or added back ("call me back", "加我微信", "打我电话") is
# a request even when it names a channel (session 10).
_CONTACT_ME_RE = re.compile(
    r"\b(?:call|ring|phone|telephone|e-?mail|text|message|contact) me\b|\bcall ?back\b|"
    r"\bget back to me\b|(?:加|打|联系|回复|打电话给|回电话给|打给)我|给我(?:回|打)(?:个)?电话|"
    r"回个电话|回电"
)
# Questions about the staff rather than asking for one of them: jobs, training,
# pay and perks, how many there are, where they are based, which languages they
# speak ("how do you train your support staff", "are you hiring agents", "你们招客服吗").
_ABOUT_STAFF_RE = re.compile(
    r"\b(?:hiring|hire|recruit\w*|jobs?|careers?|vacanc(?:y|ies)|openings|job opening|"
    r"internships?|salar(?:y|ies)|wages?|trainees?|onboard\w*|qualifications?|outsourc\w*|"
    r"offshore|in-house|(?:employee|staff) (?:discounts?|perks|benefits|pricing)|"
    r"apply (?:for (?:a |the )?(?:job|position|role)|to (?:work|join|be))|"
    r"join (?:your|the) (?:team|staff))\b|"
    # Words with other senses (training shoes, "doesn't work for me") only with the staff.
    rf"\btrain(?:s|ed|ing)? (?:your |the |new |their |an? )?(?:new )?(?:\w+ )?{_STAFF}|"
    rf"\btraining (?:do|does|for) (?:your |the )?(?:\w+ )?{_STAFF}|"
    rf"\b{_STAFF} (?:get |are |is )?(?:trained|training)\b|"
    rf"\b(?:work (?:as|for|at)|become) (?:an? |your |the )?(?:\w+ )?(?:{_STAFF}|shop|store|"
    r"company|you)\b|"
    rf"\bhow many (?:\w+ )?{_STAFF}|\b{_STAFF} get (?:a |an |any )?(?:discounts?|perks|benefits|"
    r"commission|paid)\b|"
    rf"\bwhere (?:is|are) (?:your|the) (?:\w+ )?{_STAFF} (?:based|located|from)\b|"
    rf"\b(?:are|is) (?:your|the) (?:\w+ )?{_STAFF} (?:based |located )?(?:(?:in|from) (?!(?:now|"
    r"right now|today|here|the (?:chat|queue|office))\b)\w|overseas\b|abroad\b|local\b)|"
    rf"\b(?:do|does|can|will) (?:any of )?(?:your |the |these )?(?:\w+ )?{_STAFF} (?:also )?"
    r"(?:speak|understand) (?:\w+ )?(?:english|chinese|mandarin|cantonese|spanish|french|german|"
    r"japanese|korean|italian|portuguese|russian|arabic|hindi|other languages|languages?)\b|"
    r"招聘|招人|招客服|应聘|培训|工资|薪资|薪水|待遇|福利|兼职|上岗|入职|外包|多少个?(?:客服|员工|人工|工作人员)|"
    r"(?:客服|员工|工作人员)(?:是)?在(?:国内|国外|海外)|(?:会|能)(?:说|讲)(?:英语|英文|中文|粤语|普通话|"
    r"日语|韩语)(?:吗|么|嘛)"
)
# A person who signs for, receives or collects a parcel, or must be at home for it
# ("do i need a person to sign for it", "can someone else collect my order"), and the
# courier's people: a question about the delivery, not a request for the shop's staff.
_DELIVERY_RE = re.compile(
    r"\b(?:someone|somebody|anyone|anybody|person|people|adult|human|i|me)(?: else)?"
    r"(?: \w+){0,4}? (?:to )?(?:sign(?:s|ed)? (?:for|it\b|when|on (?:delivery|arrival|my behalf))|"
    r"(?:collect|receive)s? (?:it|them|(?:the|my|a|an) (?:parcel|package|order|delivery|goods|"
    r"item|return)s?)\b|pick(?:s)? (?:it |them |(?:the|my|an?) \w+ )?up(?! (?:my |the |a )?"
    r"(?:call|phone))|be (?:at )?home|be there|be present)|"
    r"\b(?:sign(?:s|ed|ing)? for (?:it|them|the|my|a)|in person|"
    r"pick-?up point)\b|"
    r"\b(?:delivery|courier|postal|post office|mail|parcel) (?:person|people|agent|guy|man|"
    r"woman|driver|staff|team)\b|"
    # 本人 after a word for the staff is that person themselves ("跟客服本人聊"), no recipient.
    r"(?<!客服)(?<!人工)(?<!经理)(?<!主管)本人|代收|代签|代取|签收|签字|取件|自提|收件人|在家|家里没人"
)
# An explicit request to be put through keeps a clause from the two vetoes above
# ("who can i talk to about a job application", "签收的问题我想找人工").
_PUT_THROUGH_RE = re.compile(
    r"\b(?:talk|speak|chat)(?:ing)? (?:to|with)\b(?! (?:you|this bot|the bot)\b)|"
    r"\b(?:connect|transfer|put|pass|hand)(?:ed)? me\b|\bescalat\w*|"
    r"(?:转|找|要|接|联系)(?:一下)?(?:人工|客服|真人)|(?:跟|和)(?:人工|客服|真人)(?:本人)?(?:说|聊|谈)(?!过)"
)
# A bare person or bot asked as a question right after a vetoed clause continues that
# question ("who answers these chats, a person?", "你是机器人吗，还是真人？"), where
# alone "a person?" would ask for one.
_ELLIPSIS_RE = re.compile(
    rf"^(?:or |还是)?(?:an? |the )?(?:real |actual )?(?:{_STAFF}|{_BOT}|真人|人工|机器人?|人)"
    rf"(?: or (?:an? )?(?:real )?(?:{_STAFF}|{_BOT}))?(?:还是(?:真人|人工|机器人?|人))?[?？]+$"
)
_CLAUSE_RE = re.compile(r"[^,.;!?，。；！？、]+[,.;!?，。；！？、]*")


# --- session 11: classes of handoff_v4's read errors (handoff_classes_v4.tsv) ---------
# Declining a person across the two languages ("no need 转人工", "不用 human 了").
_ZH_PERSON = r"(?:转人工|人工客服|人工|真人客服|真人|客服|工作人员)"
_EN_PERSON_WORD = (
    r"(?:humans?|agents?|persons?|people|reps?|representatives?|staff|operators?|someone|"
    r"somebody|anyone|support)"
)
_MIXED_DECLINE_RE = re.compile(
    r"\b(?:no need|(?:do|does)(?:n'?t| not) need|don'?t (?:need|want)|dont (?:need|want)|"
    rf"no more)\b ?(?:to |for |a |an |the |找|转|接)*{_ZH_PERSON}|"
    rf"\bno ?{_ZH_PERSON} ?(?:needed|necessary|required|thanks)\b|"
    r"(?:不用|不需要|不必|无需|没必要|不想|不要)(?:再|了)?(?:找|转|接|叫)?(?:一下)? ?(?:an? |the )?"
    rf"{_EN_PERSON_WORD}\b"
)
# The shopper's own boss ("my manager asked me to order", "跟我领导商量一下", "我们 manager
# 让我订"): a person on the shopper's side, never one to be put through to.
_OWN_BOSS_RE = re.compile(
    r"\b(?:my|our)(?: own)? (?:\w+ )?(?:boss|bosses|manager|managers|supervisor|team lead|"
    r"team leader|line manager|superior|employer)\b|"
    r"(?<![给帮叫让替请找])(?:我|我们)(?:公司|单位|部门)?(?:的)? ?(?:领导|老板|经理|主管|上司|组长|"
    r"leader|manager|boss)"
)
# How to reach a person some other time, or how long it usually takes ("if i need a human
# later, how do i reach one?", "以后有问题怎么找人工", "平时转人工一般要排多久？先问问"):
# asked about, not asked for. Over the whole message, and not when it says now.
_LATER_RE = re.compile(
    r"\b(?:later(?: on)?|in (?:the )?future|next time|for future reference|down the (?:line|road)|"
    r"some ?day|at some point|if ever|ever need|usually|normally|typically|generally|"
    r"just curious|out of curiosity|not in a hurry|no rush)\b|"
    r"以后|下次|将来|今后|往后|到时候|平时|平常|一般情况|随便问问|先问问|了解一下|不着急|不急"
)
_HOW_RE = re.compile(
    r"\bhow\b|\bwhat(?:'s| is) the (?:best )?(?:way|process)\b|\bwhere\b|怎么|如何|怎样|"
    r"哪里|哪儿|从哪|多久|多长时间|几分钟"
)
_NOW_RE = re.compile(
    r"\b(?:now|right away|asap|immediately|straight away|urgent\w*)\b|"
    r"现在|马上|立刻|立即|赶紧|快点|(?<!不)(?<!不着)急"
)
# A product, a service or a kind of person described, not someone of the shop's asked
# for: "有真人试穿视频吗", "an authorised service agent", "a charger for someone with an
# iphone", "how many people fit in the tent", "送给喜欢钓鱼的人".
_DESCRIBES_RE = re.compile(
    r"真人(?:试穿|上身|实拍|测评|评测|照片|图片|图|视频|演示|模特|展示|穿搭|实测)|"
    r"\b(?:real|actual) (?:person|people|humans?) (?:wearing|using|modell?ing|trying)\b|"
    r"\b(?:on|of) (?:an? )?(?:real|actual) (?:humans?|persons?|people)(?: models?)?\b|"
    r"\bhuman models?\b|"
    r"\b(?:authori[sz]ed|approved|certified|official|accredited|local) (?:service|repair|"
    r"warranty) (?:agents?|centres?|centers?|partners?|points?|shops?)\b|"
    r"\b(?:repair|travel|estate|shipping|freight|forwarding|customs|insurance|purchasing|"
    r"booking|sourcing) agents?\b|"
    r"\bfor (?:a |an |the )?(?:person|people|someone|somebody|kids?|adults?|men|women|children)"
    r" (?:with|who|that|aged|over|under)\b|"
    r"\b(?:for|fits?|sleeps?|seats?) (?:two|three|four|five|six|\d+) "
    r"(?:people|persons|adults|kids)\b|"
    r"\bpeople (?:with|who (?:have|has|are|wear|love|like))\b|"
    r"\b(?:someone|somebody|a person) who (?:loves|likes|enjoys|has|owns|wears|is into|"
    r"just started)\b|\bhow many (?:people|persons)\b|"
    r"(?:适合|送给|送)[^,.;!?，。；！？]{0,12}的人|(?:能|可以)?(?:睡|坐|住|容纳|装)(?:下)?几个人|"
    r"(?:扫地|擦窗|陪伴|早教|玩具|炒菜)机器人"
)
# Words for a person the cue lacked (session 11): an advisor or an expert, 上级 (one's
# superior), 转接/接线 (to put through).
_CUE_11_RE = re.compile(
    r"\b(?:advis[oe]rs?|consultants?|experts?|hoo?mans?|hum+ans?)\b|上级|转接|接线|人呢"
)
# Asking for an earlier or named agent again ("can i talk to sarah again", "让昨天那个客服
# 小哥来处理", "跟上次那个客服再聊聊"): a request, though it reports a past contact.
_AGAIN_RE = re.compile(
    r"\b(?:talk|speak|chat)(?:ing)? (?:to|with) (?:\w+ ){0,4}?again\b|"
    r"\bsame (?:agent|person|rep|representative|lady|guy|colleague)\b|"
    r"\b(?:agent|person|rep|lady|guy|colleague|someone) who (?:helped|handled|dealt with)\b"
    r"[^.?!]{0,40}\b(?:again|pick|take|continue|finish)|"
    r"(?:让|请|叫|找|跟|和)[^,.;!?，。；！？]{0,14}(?:那个|那位)[^,.;!?，。；！？]{0,6}(?:客服|小哥|"
    r"小姐姐|同事|人)[^,.;!?，。；！？]{0,6}?(?:来|再|继续|接着)?(?:处理|跟进|聊|谈|说)"
)
# Misspelt words for a person or for speaking, one edit away (two in the long ones):
# "sombody", "spaek", "servise", "persn" (session 11; the cue only lets the scorer look).
_FUZZY_CUE_WORDS = (
    "human",
    "person",
    "agent",
    "someone",
    "somebody",
    "anyone",
    "anybody",
    "representative",
    "service",
    "support",
    "operator",
    "manager",
    "supervisor",
    "speak",
    "talk",
    "staff",
    "customer",
)
# Real words one edit from those: no misspelling ("stuff" was the seed data's one hit).
_FUZZY_NOT = frozenset(
    [
        "stuff",
        "stiff",
        "tall",
        "task",
        "tale",
        "tail",
        "take",
        "sneak",
        "steak",
        "speck",
        "manage",
        "managed",
        "manages",
        "custom",
        "customs",
        "operate",
        "operated",
        "operates",
        "supervise",
        "supervised",
        "representation",
        "humid",
    ]
)
_WORD_RE = re.compile(r"[a-z]{4,}")

# Words with 人工/真人/机器 that name no person (the handoff rule's exceptions too).
_NOT_A_PERSON_RE = re.compile(
    r"人工(?:智能|费|合成|草|缝|成本|湖|降|制|材|皮|呼吸|授|心|关节|种植|养殖|繁殖|造|审核)|人造|"
    # A fee or a cost of labour ("人工安装费"), checking by hand ("人工检查"): session 10.
    r"人工[\u4e00-\u9fff]{0,3}?(?:费|成本)|人工(?:检查|检测|核对|质检|分拣|审批|复核|验货)|"
    r"真人(?:秀|版|大小|尺寸|模特|发)|机器(?!人)"
)


def handoff_cue(normalised: str, *, upto: int | None = None) -> bool:
    """Whether the message names a person, a team, support or a bot at all (``upto``: as
    in ``handoff_veto``; the misspelt forms came in session 11)."""
    text = _NOT_A_PERSON_RE.sub(" ", normalised)
    if _CUE_RE.search(text) is not None:
        return True
    if upto is not None and upto < 11:
        return False
    return _CUE_11_RE.search(text) is not None or any(
        _near(word, target)
        for word in _WORD_RE.findall(text)
        if word not in _FUZZY_NOT
        for target in _FUZZY_CUE_WORDS
    )


def _near(word: str, target: str) -> bool:
    """Within one edit (an insertion, deletion, substitution or swap of neighbours) of
    ``target``, or two for a target of 7 letters or more; the same word is no match
    (the cue regex had it)."""
    limit = 2 if len(target) >= 7 else 1
    if word == target or abs(len(word) - len(target)) > limit or word[0] != target[0]:
        return False
    previous2: list[int] = []
    previous = list(range(len(target) + 1))
    for i, a in enumerate(word, 1):
        row = [i]
        for j, b in enumerate(target, 1):
            cost = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == target[j - 2] and word[i - 2] == b:
                cost = min(cost, previous2[j - 2] + 1)
            row.append(cost)
        previous2, previous = previous, row
    return previous[-1] <= limit


def _negated(clause: str) -> bool:
    for match in _NEGATION_RE.finditer(clause):
        scope = match.group("scope")
        person = _PERSON_RE.search(scope)
        if match.group(0).startswith(("don't transfer", "dont transfer")) or (
            person is not None and not _BOT_RE.search(scope[: person.start()])
        ):
            return True
    return bool(_NO_PERSON_NEEDED_RE.search(clause) or _ZH_NEGATION_RE.search(clause))


# The session each veto came in (the git history of this file): the honest
# cross-validation (eval/handoff_cv.py) measures a set only with the vetoes that existed
# when it was first run blind, since a later one was written with its errors in view.
# Extensions of a veto in later sessions are not told apart (docs/routing.md).
VETO_SESSIONS = {
    "declines": 7,
    "asks_what_the_bot_is": 7,
    "asks_for_hours_or_contact": 7,
    "asks_about_staff": 8,
    "delivery_or_pickup": 8,
    "continues_a_vetoed_question": 8,
    "asks_whether_needed": 9,
    "shopper_is_human": 9,
    "reports_or_compares": 9,
    "asks_about_the_process": 10,
    "names_a_role": 10,
    "past_contact": 10,
    "after_a_condition": 10,
    "declines_mixed": 11,
    "own_boss": 11,
    "asks_how_later": 11,
    "describes_someone": 11,
    "asks_for_the_same_person": 11,
}


def _allowed(check: str, upto: int | None) -> bool:
    return upto is None or VETO_SESSIONS[check] <= upto


def handoff_veto(clause: str, *, upto: int | None = None) -> str | None:
    """Why this clause (normalised) is no request for a person, or None. ``upto``: only
    the vetoes of that session and before (the cross-validation; None: all)."""

    def on(check: str, pattern: re.Pattern[str]) -> bool:
        return _allowed(check, upto) and pattern.search(clause) is not None

    if _allowed("declines", upto) and _negated(clause):
        return "declines"
    if on("declines_mixed", _MIXED_DECLINE_RE):
        return "declines"
    if on("own_boss", _OWN_BOSS_RE):
        return "names_a_role"
    if on("asks_what_the_bot_is", _IDENTITY_RE):
        return "asks_what_the_bot_is"
    if on("asks_about_the_process", _PROCESS_RE):
        return "asks_about_the_process"
    if on("asks_for_hours_or_contact", _INFO_RE) and not _CONTACT_ME_RE.search(clause):
        return "asks_for_hours_or_contact"
    if on("past_contact", _PAST_CONTACT_RE):
        return "reports_or_compares"
    put_through = _PUT_THROUGH_RE.search(clause) is not None or on(
        "asks_for_the_same_person", _AGAIN_RE
    )
    if not put_through:
        if on("asks_about_staff", _ABOUT_STAFF_RE):
            return "asks_about_staff"
        if on("delivery_or_pickup", _DELIVERY_RE):
            return "delivery_or_pickup"
        if on("names_a_role", _ROLE_RE):
            return "names_a_role"
        if on("describes_someone", _DESCRIBES_RE):
            return "describes_someone"
    # Whatever the verb: "do i have to talk to someone" asks whether one must.
    if on("asks_whether_needed", _WHETHER_NEEDED_RE):
        return "asks_whether_needed"
    if not put_through:
        if on("shopper_is_human", _SHOPPER_IS_HUMAN_RE):
            return "shopper_is_human"
        if on("reports_or_compares", _REPORT_OR_OPINION_RE):
            return "reports_or_compares"
    return None


def handoff_remainder(normalised: str, *, upto: int | None = None) -> tuple[str, list[str]]:
    """The message without its vetoed clauses, and the vetoes' reasons (``upto``: as
    in ``handoff_veto``)."""
    if (
        _allowed("asks_how_later", upto)
        and _LATER_RE.search(normalised)
        and _HOW_RE.search(normalised)
        and not _NOW_RE.search(normalised)
    ):
        return "", ["asks_about_the_process"]
    kept, reasons = [], []
    previous: str | None = None
    condition = False
    for clause in _CLAUSE_RE.findall(normalised) or [normalised]:
        reason = handoff_veto(clause, upto=upto)
        if (
            reason is None
            and previous is not None
            and _allowed("continues_a_vetoed_question", upto)
            and _ELLIPSIS_RE.match(clause.strip())
        ):
            reason = previous
        if (
            reason is None
            and condition
            and _allowed("after_a_condition", upto)
            and _WILL_QUESTION_RE.match(clause.strip())
        ):
            reason = "asks_about_the_process"
        condition = _CONDITION_RE.search(clause.strip()) is not None
        previous = reason
        if reason is None:
            kept.append(clause.strip())
        else:
            reasons.append(reason)
    return " ".join(c for c in kept if c), reasons


# --- the scorer -----------------------------------------------------------------------


def _features_text(normalised: str) -> str:
    return _DIGITS_RE.sub("0", normalised)


@dataclass(frozen=True)
class HandoffScorer:
    vectorizer: FeatureUnion
    weights: np.ndarray  # TF-IDF columns, then embedding_dim embedding columns
    bias: float
    embedding_dim: int  # 0: TF-IDF only (embeddings off)
    threshold: float
    gate: float  # the score a rule match needs to count
    examples: int
    train_seconds: float

    @cached_property
    def _lookup(self) -> TfidfLookup:
        return tfidf_lookup(self.vectorizer)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lookup", None)  # rebuilt after loading; analyzers don't pickle
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def score(self, *, normalised: str, embedding: np.ndarray | None) -> float:
        """P(a request for a person) for a normalised text and, when the scorer uses
        them, its sentence embedding."""
        total = self.bias + float(tfidf_dot(self._lookup, _features_text(normalised), self.weights))
        if self.embedding_dim and embedding is not None:
            total += float((_EMBEDDING_WEIGHT * embedding) @ self.weights[-self.embedding_dim :])
        return 1.0 / (1.0 + math.exp(-total))


def _vectorizer() -> FeatureUnion:
    common: dict[str, Any] = {"sublinear_tf": True, "lowercase": False, "dtype": np.float64}
    return FeatureUnion(
        [
            ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4), **common)),
            (
                "words",
                TfidfVectorizer(
                    analyzer="word", ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b", **common
                ),
            ),
        ]
    )


def handoff_examples_load(path: Path = EXAMPLES_FILE) -> list[tuple[str, bool]]:
    """(text, is a request for a person) from a file in handoff.tsv's format."""
    from routing.training_data import HANDOFF, handoff_load

    return [(item.text, item.intent == HANDOFF) for item in handoff_load(path)]


def training_samples(*, read_sets: bool = True) -> list[tuple[str, bool]]:
    """The examples file, every evaluation set whose errors have been read
    (``read_sets``: eval/data.py's HANDOFF_READ_SETS, 1,557 labelled lines; session 10:
    grouped cross-validation says they generalise, docs/routing.md), plus every seed
    intent example that names a person, a team or a bot (the scorer only sees such
    messages; none of them asks for one), except complex_question's: its complaints
    (L3) sit close to requests ("i want this escalated"); the manager requests among
    them were moved to the examples file as requests in session 9."""
    from routing.seed import seed_utterances
    from routing.training_data import HANDOFF_READ_SETS
    from routing.types import COMPLEX_QUESTION

    samples = handoff_examples_load()
    if read_sets:
        for path in HANDOFF_READ_SETS:
            samples += handoff_examples_load(path)
    samples = list({text_normalise(t): (t, label) for t, label in samples}.values())
    seen = {text_normalise(t) for t, _ in samples}
    for text, _, intent in seed_utterances():
        normalised = text_normalise(text)
        if intent != COMPLEX_QUESTION and normalised not in seen and handoff_cue(normalised):
            seen.add(normalised)
            samples.append((text, False))
    return samples


class Embedder(Protocol):
    def __call__(self, texts: list[str]) -> np.ndarray: ...


def handoff_scorer_train(
    samples: Sequence[tuple[str, bool]] | None = None,
    *,
    embed: Embedder | None = None,
    threshold: float | None = None,
) -> HandoffScorer:
    """Fit the scorer. ``embed``: texts -> sentence embeddings (rows), or None for a
    TF-IDF-only scorer."""
    started = time.perf_counter()
    samples = list(samples if samples is not None else training_samples())
    texts = [text_normalise(t) for t, _ in samples]
    y = np.array([label for _, label in samples], dtype=bool)
    vectorizer = _vectorizer()
    x = vectorizer.fit_transform([_features_text(t) for t in texts])
    embedding_dim = 0
    if embed is not None:
        from scipy.sparse import csr_matrix, hstack

        vectors = embed([t for t, _ in samples])
        embedding_dim = vectors.shape[1]
        x = hstack([x, csr_matrix(_EMBEDDING_WEIGHT * vectors)]).tocsr()
    model = LogisticRegression(C=_C, max_iter=5000, class_weight="balanced")
    model.fit(x, y)
    if threshold is None:
        threshold = THRESHOLD if embedding_dim else THRESHOLD_NO_EMBEDDINGS
    return HandoffScorer(
        gate=GATE,
        vectorizer=vectorizer,
        weights=np.asarray(model.coef_[0], dtype=np.float64),
        bias=float(model.intercept_[0]),
        embedding_dim=embedding_dim,
        threshold=threshold,
        examples=len(samples),
        train_seconds=round(time.perf_counter() - started, 3),
    )


_scorer: HandoffScorer | None = None
_scorer_embeddings: bool | None = None
_scorer_lock = threading.Lock()


def _training_key(samples: Sequence[tuple[str, bool]], embeddings: bool) -> str:
    """What the trained scorer depends on: its samples, the embedding model (or none),
    scikit-learn's version and this module's constants."""
    digest = hashlib.sha256()
    if embeddings:
        from knowledge.embedding import model_path

        digest.update(model_path().encode())
    parts = [
        sklearn.__version__,
        repr((_C, _EMBEDDING_WEIGHT, THRESHOLD, THRESHOLD_NO_EMBEDDINGS, GATE)),
    ]
    for part in parts + [f"{int(label)}\t{text}" for text, label in samples]:
        digest.update(part.encode())
        digest.update(b"\n")
    return digest.hexdigest()[:24]


def _stored_path(key: str) -> Path:
    return Path(settings.VAR_DIR) / "handoff" / f"scorer-{key}.pickle"


def handoff_scorer_get() -> HandoffScorer:
    """This process's scorer. Trained from files, so every process would train the
    same one: the first stores it under VAR_DIR and the others load it (0.1 s), since
    training it with embeddings takes seconds (about 8 s cold on this machine, session
    11). Called in the start-up preload with the router, off the event loop."""
    global _scorer, _scorer_embeddings
    embeddings = bool(settings.TIERDESK_ROUTER_EMBEDDINGS)
    scorer = _scorer
    # Called on every routed message (router_snapshot_get): the files it is trained
    # from don't change while the process runs, so only the setting is compared.
    if scorer is not None and _scorer_embeddings == embeddings:
        return scorer
    with _scorer_lock:
        if _scorer is None or _scorer_embeddings != embeddings:
            samples = training_samples()
            key = _training_key(samples, embeddings)
            _scorer = _scorer_load(key)
            if _scorer is None:
                # Processes that start together (Daphne, the Celery worker, test
                # workers) train once: the others wait for the first and load its file.
                with _train_lock(key):
                    _scorer = _scorer_load(key) or _scorer_store(key, samples, embeddings)
            _scorer_embeddings = embeddings
        return _scorer


@contextmanager
def _train_lock(key: str) -> Iterator[None]:
    """An exclusive lock on VAR_DIR/handoff/scorer-KEY.lock (released when the holder
    exits, however it exits); without a writable VAR_DIR, no lock."""
    path = _stored_path(key).with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _scorer_load(key: str) -> HandoffScorer | None:
    try:
        # Written by this code into this deployment's VAR_DIR, like the models there.
        loaded = pickle.loads(_stored_path(key).read_bytes())
    except FileNotFoundError:
        return None
    except Exception:  # a truncated or foreign file: train again
        logger.exception("stored handoff scorer %s unreadable; training", key)
        return None
    return loaded if isinstance(loaded, HandoffScorer) else None


def _scorer_store(key: str, samples: list[tuple[str, bool]], embeddings: bool) -> HandoffScorer:
    from routing.example_embeddings import examples_embed

    scorer = handoff_scorer_train(samples, embed=examples_embed if embeddings else None)
    logger.info("handoff scorer: %d examples in %.2fs", scorer.examples, scorer.train_seconds)
    path = _stored_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(pickle.dumps(scorer))
        os.replace(partial, path)  # atomic: another process reads all of it or nothing
    except OSError:
        logger.exception("could not store the handoff scorer at %s", path)
    return scorer


# --- the decision ---------------------------------------------------------------------


@dataclass(frozen=True)
class HandoffVerdict:
    request: bool
    score: float | None  # the scorer's, when it ran
    reason: dict[str, Any]
    tier: str | None = None  # the matching rule's tier, when a rule decided


class _Rule(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def tier(self) -> str: ...

    def evaluate(self, *, text: str, tokens: int, language: str) -> dict[str, Any] | None: ...


def handoff_decide(
    *,
    normalised: str,
    language: str,
    rules: Sequence[_Rule],
    scorer: HandoffScorer | None,
    embedding_of: Callable[[str], np.ndarray | None],
    upto: int | None = None,
) -> HandoffVerdict:
    """Whether ``normalised`` asks for a person: the handoff rules and the scorer on what
    is left after the vetoed clauses. The router asks at the handoff rules' priority, so
    a request inside a complaint is decided before the complaint rules (angry-complaint,
    two-requests) take it (session 10). A rule match counts when the scorer gives it at
    least ``scorer.gate``; the scorer alone at ``scorer.threshold`` (both chosen by
    grouped cross-validation, docs/routing.md). ``embedding_of(text)``: that text's
    sentence embedding; ``upto``: only the vetoes of that session and before (the
    cross-validation)."""
    from routing.normalise import text_tokens

    remainder, vetoed = _remainder(normalised, upto=upto)
    if not remainder:
        return HandoffVerdict(False, None, vetoed)
    tokens = len(text_tokens(remainder))
    matched: tuple[_Rule, dict[str, Any]] | None = None
    for rule in rules:
        evidence = rule.evaluate(text=remainder, tokens=tokens, language=language)
        if evidence is not None:
            matched = (
                rule,
                {"kind": "rule", "rule": rule.name, "rule_kind": rule.kind, **evidence},
            )
            break
    # With no gate a rule match needs no score (nor the embedding it would cost).
    if matched is not None and (scorer is None or scorer.gate <= 0):
        return HandoffVerdict(True, None, {**matched[1], **vetoed}, matched[0].tier)
    if scorer is None:
        return HandoffVerdict(False, None, vetoed)
    embedding = embedding_of(remainder) if scorer.embedding_dim else None
    score = scorer.score(normalised=remainder, embedding=embedding)
    if matched is not None:
        if score >= scorer.gate:
            reason = {**matched[1], "score": round(score, 4), **vetoed}
            return HandoffVerdict(True, score, reason, matched[0].tier)
        # The rule's words without the scorer's backing.
        vetoed = {**vetoed, "gated": matched[0].name}
    reason = {"kind": "handoff_scorer", "score": round(score, 4), "threshold": scorer.threshold}
    return HandoffVerdict(score >= scorer.threshold, score, {**reason, **vetoed})


def _remainder(normalised: str, *, upto: int | None = None) -> tuple[str, dict[str, Any]]:
    """The text left to decide on ("" when nothing names a person), and the vetoes as
    a reason (the router's shape: a rule's reason stays the rule's)."""
    if not handoff_cue(normalised, upto=upto):
        return "", {}
    remainder, vetoes = handoff_remainder(normalised, upto=upto)
    if not handoff_cue(remainder, upto=upto):
        remainder = ""
    return remainder, ({"vetoed": vetoes} if vetoes else {})
