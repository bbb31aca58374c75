# ruff: noqa: E501  (the translation table: one msgid and its translation a line)
"""Fill locale/zh_Hans/LC_MESSAGES/django.po from the table below (docs/i18n.md).

After ``manage.py makemessages -l zh_Hans`` (new or changed strings), add their
translations here and run ``.venv/bin/python scripts/translate_zh.py``: it rewrites the
msgstr of every msgid it knows and lists the ones it doesn't (left empty: English).
Setup compiles the .po into the .mo Django reads (``manage.py compilemessages``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PO = Path(__file__).resolve().parent.parent / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"

ZH = {
    # the admin (chatbot/admin.py, transcript)
    "up": "赞",
    "down": "踩",
    "why this tier": "为何选此层级",
    "model": "模型",
    "first chunk": "首段耗时",
    "total": "总耗时",
    "tokens": "令牌数",
    "release": "发布版本",
    "language": "语言",
    "Shopper": "顾客",
    "Technical details": "技术细节",
    "conversation": "对话",
    "last shopper message": "顾客最新消息",
    "messages": "消息数",
    "rating": "评价",
    "handoff": "转人工",
    "text": "内容",
    "rated reply": "被评价的回复",
    "the whole conversation": "整个对话",
    "details": "详情",
    "No messages yet.": "暂无消息。",
    # the chat's error frames (chatbot/refusals.py, protocol.py, feedback.py, identity)
    "that message is not a finished reply in this conversation": "该消息不是本对话中已完成的回复",
    "there is no reply to rate yet": "目前还没有可评价的回复",
    "could not store the rating; try again": "评价未能保存，请重试",
    "token is not base64url": "令牌不是 base64url 格式",
    "shopper tokens are not configured": "商店未配置顾客令牌",
    "token is empty or too long": "令牌为空或过长",
    "token must be payload.signature": "令牌格式应为 payload.signature",
    "token signature does not match": "令牌签名不匹配",
    "token payload is not JSON": "令牌内容不是 JSON",
    "token payload is not an object": "令牌内容不是对象",
    "customer_id must be a non-empty string": "customer_id 必须是非空字符串",
    "vip must be a boolean": "vip 必须是布尔值",
    "exp must be an integer (unix seconds)": "exp 必须是整数（Unix 秒）",
    "token has expired": "令牌已过期",
    "token lifetime exceeds the allowed maximum": "令牌有效期超过允许的上限",
    "JWT header is not readable": "无法读取 JWT 头部",
    "JWT must be signed with HS256": "JWT 必须使用 HS256 签名",
    "JWT key id is unknown": "JWT 密钥 ID 未知",
    "field '%(name)s' must be a %(kind)s": "字段“%(name)s”必须是 %(kind)s",
    "field '%(name)s' is longer than %(max)s characters": "字段“%(name)s”超过 %(max)s 个字符",
    "binary frames are not accepted; send JSON text": "不接受二进制帧，请发送 JSON 文本",
    "frame is larger than %(max)s bytes": "帧超过 %(max)s 字节",
    "frame is not valid JSON": "帧不是有效的 JSON",
    "frame must be a JSON object": "帧必须是 JSON 对象",
    "field 'id' must not be empty": "字段“id”不能为空",
    "message is empty": "消息为空",
    "message is longer than %(max)s characters": "消息超过 %(max)s 个字符",
    "unknown frame type %(type)s": "未知的帧类型 %(type)s",
    "field 'message_id' must be a positive integer": "字段“message_id”必须是正整数",
    "a reply is rated 'up' or 'down'": "回复的评价只能是“up”或“down”",
    "a conversation is rated 1 to 5": "对话的评分为 1 到 5",
    "We couldn't save your message just now; it will be sent again.": "暂时无法保存您的消息，稍后会自动重新发送。",
    "You're sending messages too fast; this one is saved. Please try again shortly.": "您发送消息太快了；这条消息已保存，请稍后再试。",
    "Too many messages at once; this one is saved but won't be answered.": "同时发送的消息太多；这条消息已保存，但不会得到回复。",
    "Please confirm you're here: press the button below to send your message.": "请确认您在线：点击下方按钮发送您的消息。",
    "This message looks automated, so it wasn't answered. If you're a person, please reload the page and try again.": "这条消息看起来像是自动发送的，因此未予回复。如果您是真人，请刷新页面后重试。",
    "This chat only works from the shop's chat widget.": "此聊天只能通过商店的聊天窗口使用。",
    "This conversation belongs to another shopper; start a new one.": "此对话属于另一位顾客，请开始新的对话。",
    "Something went wrong on our side; your message is saved.": "我们这边出了点问题；您的消息已保存。",
    # the operator console (frontend/templates/frontend/operators/)
    "why (audited)": "原因（记入审计）",
    "Tierdesk operators": "Tierdesk 运营",
    "Tierdesk · operator console": "Tierdesk · 运营控制台",
    "admin": "管理后台",
    "Confirm:": "确认：",
    "Reason (audited):": "原因（记入审计）：",
    "Confirm": "确认",
    "Cancel": "取消",
    "Automatic rollback:": "自动回滚：",
    "Stable": "稳定版",
    "none yet (the settings serve every session)": "暂无（所有会话使用设置中的配置）",
    "Candidate": "候选版",
    "of sessions (max %(max)s%%)": "的会话（上限 %(max)s%%）",
    "New weight": "新权重",
    "Reason": "原因",
    "Set weight…": "设置权重…",
    "Resume…": "恢复…",
    "Pause…": "暂停…",
    "Promote…": "升级为稳定版…",
    "Roll back…": "回滚…",
    "No candidate is running.": "没有正在运行的候选版。",
    "Start…": "启动…",
    "No drafts to start.": "没有可启动的草稿。",
    "Last %(hours)s h": "最近 %(hours)s 小时",
    "Cost saving against sending everything to L3:\n    <strong>%(saving)s</strong> (modelled cost %(cost)s vs %(baseline)s all-L3).": "相比全部交给 L3 节省的成本：\n    <strong>%(saving)s</strong>（估算成本 %(cost)s，全部 L3 为 %(baseline)s）。",
    "variant": "版本",
    "replies": "回复数",
    "errors": "错误率",
    "fallbacks": "降级率",
    "handoff requests": "转人工请求",
    "ratings": "评价数",
    "cost": "成本",
    "saving vs all-L3": "相比全 L3 节省",
    "No replies in this range.": "此时间范围内没有回复。",
    "tier": "层级",
    "Human handoff, last %(hours)s h": "转人工，最近 %(hours)s 小时",
    "Guardrail decisions": "护栏判定",
    "at (UTC)": "时间（UTC）",
    "outcome": "结果",
    "numbers": "数据",
    "No decisions yet.": "暂无判定。",
    "Audit trail": "审计记录",
    "who": "操作人",
    "action": "操作",
    "why": "原因",
    "Nothing yet.": "暂无记录。",
    "New draft release": "新建草稿版本",
    "Name": "名称",
    "Description": "描述",
    "Configuration (JSON)": "配置（JSON）",
    "Create draft": "创建草稿",
    "p95 first chunk, per variant": "首段 p95 耗时（按版本）",
    "Error rate, per variant": "错误率（按版本）",
    "CSAT (satisfied ratings), per variant": "满意度（满意评价占比，按版本）",
    "Traffic share, per variant": "流量占比（按版本）",
    "p95 first chunk, per tier": "首段 p95 耗时（按层级）",
    "Traffic share, per tier": "流量占比（按层级）",
    "Cumulative cost vs all-L3 baseline": "累计成本与全 L3 基线对比",
    "Human intervention rate": "人工介入率",
    "Time to first human reply (min)": "人工首次回复时间（分钟）",
    "Conversations": "对话数",
    "Handed to a person": "转给人工",
    "Time to first human reply (mean)": "人工首次回复时间（平均）",
    "Handle time (mean, claim to resolve)": "处理时长（平均，从接手到解决）",
    "CSAT bot (%(n)s ratings)": "机器人满意度（%(n)s 条评价）",
    "CSAT human (%(n)s ratings)": "人工满意度（%(n)s 条评价）",
    "Waiting now / agents online": "当前等待 / 在线客服",
    "no data in this range": "此时间范围内没有数据",
    # strings whose translations were in the .po only (the table is the source)
    "not asked (an article's lead); the don't-know reply was kept": "未询问（文章导语）；保留了“不知道”的回复",
    "yes (%(role)s): answered from a passage the word check refused": "是（%(role)s）：用词语检查拒绝的段落作答",
    "no (%(role)s): the don't-know reply was kept": "否（%(role)s）：保留了“不知道”的回复",
    "answerability judge": "可答性判断",
    "shopper wrote": "顾客发过消息",
    "All, opened without a message too": "全部（包括打开后未发消息的）",
    "Yes": "是",
    "Say why: the reason is kept in the audit trail.": "请说明原因：原因会记入审计记录。",
    "Give a weight between 0 and %(maximum)s%%.": "请给出 0 到 %(maximum)s%% 之间的权重。",
    "Model-phrased share: <strong>%(share)s</strong> of %(n)s replies that planned a model; %(degraded)s went out without one under load (admission control).": "模型撰写比例：计划由模型回复的 %(n)s 条中为 <strong>%(share)s</strong>；高负载下有 %(degraded)s 条未经模型发出（准入控制）。",
    "Of the replies that planned a model, the share a model wrote; the rest went out as the tier's text that needs no model because the model could not start within the first-chunk budget.": "计划由模型回复的消息中，由模型撰写的比例；其余因模型无法在首段时限内开始，改发该层无需模型的文本。",
    "model-phrased": "模型撰写",
    # the operator console (issue #36 item 7): chart legends, the baseline, the candidate card
    "intervention rate": "介入率",
    "first human reply (min)": "人工首次回复（分钟）",
    "actual (modelled)": "实际（估算）",
    "all-L3 baseline": "全 L3 基线",
    "The settings as deployed (created automatically).": "部署时的设置（自动创建）。",
    "description": "描述",
    "config": "配置",
    "paused": "已暂停",
    "started %(started)s UTC · last step %(step_at)s UTC ·\n        schedule +%(step)s%% every %(interval)s min": "开始于 %(started)s UTC · 上次调整 %(step_at)s UTC ·\n        计划每 %(interval)s 分钟 +%(step)s%%",
    "at most %(max)s%% (TIERDESK_RELEASE_MAX_WEIGHT); promote to serve everyone": "最多 %(max)s%%（TIERDESK_RELEASE_MAX_WEIGHT）；要服务全部会话请晋升",
}


def _unquote(lines: list[str]) -> str:
    return "".join(ast.literal_eval(line.strip()) for line in lines)


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def main() -> int:
    lines = PO.read_text(encoding="utf-8").splitlines()
    out: list[str] = []
    missing: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#|"):
            i += 1  # makemessages' guess at the previous msgid: the table decides
            continue
        if line.startswith("#,") and "fuzzy" in line:
            # Fuzzy entries are skipped by compilemessages; the table's are exact.
            flags = [f.strip() for f in line[2:].split(",") if f.strip() != "fuzzy"]
            if flags:
                out.append("#, " + ", ".join(flags))
            i += 1
            continue
        if not line.startswith("msgid "):
            out.append(line.replace('"Language: \\n"', '"Language: zh_Hans\\n"'))
            i += 1
            continue
        block = [line[6:]]
        i += 1
        while lines[i].startswith('"'):
            block.append(lines[i])
            i += 1
        msgid = _unquote(block)
        out += ["msgid " + block[0], *block[1:]]
        start = i  # msgstr and its continuation lines
        i += 1
        while i < len(lines) and lines[i].startswith('"'):
            i += 1
        if not msgid:  # the header: kept as it is
            out += [x.replace('"Language: \\n"', '"Language: zh_Hans\\n"') for x in lines[start:i]]
            continue
        text = ZH.get(msgid)
        if text is None:
            missing.append(msgid)
        out.append("msgstr " + _quote(text or ""))
    PO.write_text("\n".join(out) + "\n", encoding="utf-8")
    for msgid in missing:
        print(f"untranslated: {msgid!r}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
