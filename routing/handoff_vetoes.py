"""The handoff recogniser's vetoes: clauses that mention a person without asking for
one (declining one, asking what the bot is, asking for hours or contact details, about
the queue or the staff, reporting an earlier contact...). ``handoff_remainder`` is the
message without its vetoed clauses, which the rule and the scorer then decide on."""

from __future__ import annotations

import re

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
    # "不找人工了", "那就不麻烦人工了".
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
    # "周末有客服吗"): opening hours asked another way.
    r"\b(?:available|working|work|works|open|online|around|on duty|staffed|in)\b (?:on |at |"
    r"during |over |for )?(?:the )?(?:weekends?|saturdays?|sundays?|holidays?|public holidays?|"
    r"bank holidays?|christmas(?: day| break| eve)?|new year'?s?(?: day| eve)?|nights?|evenings?|"
    r"easter|thanksgiving|holiday season)\b|"
    r"(?:周末|周六|周日|礼拜[六天日]|星期[六日天]|节假日|假期|国庆|春节|过年|晚上(?!好)|夜里|半夜|"
    r"凌晨)[^,.;!?，。；！？]{0,8}?(?:有|上班|在线|在吗|值班|营业)"
)
# The shopper saying they are a person, not a bot (a captcha, a blocked checkout):
# "i'm human too", "prove i'm not a robot", "我是真人".
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
# have to call someone to cancel", "退货需要联系客服吗".
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
# "机器人比人工方便". Gives way to an explicit put-through.
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
# 一个小时", "i was transferred last time and waited an hour").
_PAST_CONTACT_RE = re.compile(
    r"(?:上次|上回|之前|以前|昨天|前天|刚才)[^,.;!?，。；！？]{0,10}?(?:找|转|联系|打给|打|等)(?:了|过)?"
    r"[^,.;!?，。；！？]{0,3}(?:人工|客服|真人)[^,.;!?，。；！？]{0,12}(?:了|过)|"
    r"\bi was (?:transferred|put through|connected|escalated)\b|"
    r"\b(?:last time|yesterday|before)\b[^,.;!?]{0,40}\b(?:waited|took|was|spent|hung up)\b"
)
# Questions about the queue or what happens on the way to a person, not a request for
# one ("how long is the wait for an agent", "转人工一般要等多久", "what should i have ready
# before contacting support", "什么情况下会转人工", "does the bot pass hard questions to
# staff?").
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
# talk to: "the checkout asks for a contact person".
_ROLE_RE = re.compile(r"\bcontact (?:person|persons|people|name)\b|联系人|对接人")
# Asking to be called, written or added back ("call me back", "加我微信", "打我电话") is
# a request even when it names a channel.
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


def _negated(clause: str) -> bool:
    for match in _NEGATION_RE.finditer(clause):
        scope = match.group("scope")
        person = _PERSON_RE.search(scope)
        if match.group(0).startswith(("don't transfer", "dont transfer")) or (
            person is not None and not _BOT_RE.search(scope[: person.start()])
        ):
            return True
    return bool(_NO_PERSON_NEEDED_RE.search(clause) or _ZH_NEGATION_RE.search(clause))


# The round of revision each veto came in (from the git history): the honest
# cross-validation (bench/handoff_cv.py) measures a set only with the vetoes that existed
# when it was first run blind, since a later one was written with its errors in view.
# Later extensions of a veto are not told apart (docs/routing.md).
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
    the vetoes of that round and before (the cross-validation; None: all)."""

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
