"""The English and Chinese patterns `memory.longterm.analysis` reads a clause by: what
the user did not state themselves, where clauses split, who a clause is about, and
whether it is an instruction, a request, a passing state or a durable statement."""

import re

# -- what the user did not state themselves -----------------------------------------

CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
QUOTED_LINE = re.compile(r"^\s*(?:>|&gt;|\|).*$", re.M)
QUOTE_MARKS = re.compile(
    r"\"[^\"\n]{2,}\"|“[^”]{2,}”|「[^」]{2,}」|『[^』]{2,}』|‘[^’]{4,}’"
    r"|(?<![A-Za-z])'[^'\n]{8,}'(?![A-Za-z])"
)
HANDOFF = re.compile(
    r"(?:\b(?:wrote|writes|said|says|replied|posted|sent(?: me)?|forwarded)\b\s*:"
    r"|-{2,}\s*(?:forwarded|original) message\s*-{2,}"
    r"|^\s*(?:from|to|subject|date|cc|sent|发件人|收件人|主题)\s*[:：]"
    r"|\b(?:here(?:'s| is| are)|below is|this is)\b[^\n:：]{0,40}[:：]"
    r"|(?:下面|以下|这)是[^\n：:]{0,20}[：:]"
    r"|[^\n：:]{0,12}(?:发来的|转发的|写道|说道|原文)[^\n：:]{0,6}[：:]"
    r"|\b(?:proofread|translate|rewrite|edit|polish|check|summari[sz]e)\b[^\n:：]{0,30}[:：]"
    r"|(?:润色|翻译|改写|检查)[^\n：:]{0,10}[：:]"
    # a line that speaks as someone else ("assistant: …", "> system: …", "助手：…")
    r"|^[\s>]*(?:assistant|system|user|ai|bot|model|助手|系统|用户)\s*[:：]"
    # a prompt injection: what follows is an attack on the assistant, not the user's say
    r"|\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|system)\s+(?:instructions|prompts?|rules|messages)\b"
    r"|忽略(?:之前|以上|前面|上面)的?(?:所有)?(?:指令|指示|提示|规则)"
    # a pasted memory block, or a pasted JSON document
    r"|^\s*(?:pinned decisions|summary of (?:the|our) earlier conversation|from earlier"
    r" conversations|what i remember about you|long-term memory)\b[^\n]{0,40}[:：(]"
    r"|^\s*[\[{]\s*[\"\[{])",
    re.I | re.M,
)
SLASH_COMMAND = re.compile(r"^\s*/[a-z]+\b", re.I)

# -- clause split ------------------------------------------------------------------

SENTENCES = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；\n!?;])\s*|\s+-\s+|\s*…\s*")
EN_SPLIT = re.compile(
    r"(\s*,(?!\d)\s*|\s+(?=(?:but|so|and then|because)\s+(?:i|i'm|my|we)\b))", re.I
)
"""Where a clause may start (captured: a clause joined back keeps the user's own
separator, so that it is still their words); never inside a number ("$48,500")."""
AND_SPLIT = re.compile(r"\s+and\s+(?=(?:i|i'm|my)\s)", re.I)
"""Where "and" starts a clause of its own ("I live in Lisbon and I work as …"); split
only after a clause with a verb ("my wife and I live in Leeds" stays one)."""
ZH_SPLIT = re.compile(r"([，,、]\s*)")
HAS_VERB = re.compile(
    r"\b(?:is|are|was|were|am|'s|has|have|had|got|gets|called|named|does|did|do|will|can|"
    r"\w+(?:ed|es))\b|叫|是|有",
    re.I,
)

# -- the parts of a clause ---------------------------------------------------------

CJK = re.compile(r"[\u3400-\u9fff]")
LATIN_START = re.compile(r"^\s*[A-Za-z]")
LEAD = re.compile(
    r"^(?:(?:oh(?! no\b)|ah|well|so|and|but|also|plus|then|actually|honestly|btw|by the way|fyi|"
    r"just so you know|ok(?:ay)?|anyway|oh and|also,|p\.?s\.?|lol|haha|hey|hi|these days|"
    r"nowadays|currently|lately|at the moment|basically|in general|generally|from now on|"
    r"going forward|in (?:the )?future|from here on)\b[,:!.]?\s*)+"
    r"|^(?:(?:big|some|quick|good|bad|small)\s+)?(?:news|update|heads up|fyi|note|ps)\s*[:!-]\s*"
    r"|^(?:对了|另外|其实|哦|噢|嗯|顺便说一下|说一下|还有|而且|然后|补充一下|话说)[，,、：:]?\s*",
    re.I,
)
REMEMBER = re.compile(
    r"^(?:(?:please|pls|can you|could you|would you|will you)\s+)*"
    r"(?:remember|note|keep in mind|don'?t forget|make a note|take note|never forget)"
    r"(?:\s+(?:that|this|for me|for later))*\b[,:]?\s*"
    r"|^(?:请|麻烦)?(?:帮我)?(?:记住|记得|记一下|记下来|记下|记着|备注)(?:一下)?[：:，,]?\s*",
    re.I,
)
FILLER_ONLY = re.compile(
    r"^(?:that|this|it|me|please|thanks|for me|ok|这个|那个|一下|吧|哦|好|了)?[\s.!。！,，]*$", re.I
)
EN_QUESTION_START = re.compile(
    r"^(?:what|what's|whats|where|where's|when|who|who's|whom|whose|why|how|how's|which|"
    r"do|does|did|can|could|would|will|is|are|was|were|should|shall|may|might|have|has|"
    r"any idea|is it|am i)\b",
    re.I,
)
ZH_QUESTION = re.compile(
    r"[吗么嘛呢][\s。.!！~]*$|什么|怎么|为什么|为何|哪|谁|几[个点岁]|多少|是否|有没有|能不能|可不可以"
)
SOCIAL = re.compile(
    r"^(?:hi|hello|hey|hiya|yo|good (?:morning|afternoon|evening|night)|morning|evening|"
    r"thanks?(?: you)?(?: so much| a lot| very much)?|thx|ty|cheers|much appreciated|"
    r"ok(?:ay)?|k|sure|yes|yeah|yep|no|nope|nah|got it|sounds good|great|good|nice|cool|"
    r"awesome|perfect|amazing|brilliant|fine|alright|right|lol|lmao|haha+|hah|wow|oh(?: no)?|"
    r"oops|ugh|hmm+|bye|see you|good job|well done|nice one|exactly|agreed|indeed|go ahead|"
    r"sure,? go ahead|that did the trick|that'?s (?:it|all|great|perfect|helpful|right))\b"
    r"[\s,.!:;)(]*(?:that'?s[^.!?]*|you'?re[^.!?]*|[^a-z]*)$"
    r"|^(?:what an?|how|such an?)\b[^?]*!\s*$"
    r"|^(?:my bad|sorry|oops|no,?\s+(?:the|that|not|i|it)|not that one|i mean|i meant|"
    r"never ?mind)\b"
    r"|^(?:great|nice|good|amazing|awesome|excellent|perfect|wonderful|brilliant)\s+"
    r"(?:job|answer|work|one|stuff|point)\b"
    r"|^you(?:'re| are)\s+(?:so\s+|really\s+|the\s+)?(?:amazing|great|awesome|the best|"
    r"brilliant|a star|a lifesaver|right|welcome|funny|smart|helpful)\b"
    r"|^(?:你好|您好|嗨|哈喽|早上好|早安|晚上好|晚安|下午好|谢谢|多谢|感谢|太感谢|谢啦|好的|好吧|"
    r"嗯|恩|行|可以|没问题|收到|明白|了解|知道了|哈哈|嘿嘿|哇|天哪|厉害|棒|不错|太棒|"
    r"你真|辛苦|再见|拜拜|ok|好滴|对|是的|没错|下次|回头|改天|再聊)"
    r"|^[\W\d_]*$",
    re.I,
)
ZH_CARE = re.compile(
    r"^(?:别太|不要太|早点|多)[^，。,]{0,8}(?:了|哦|啊|吧)?[。!！]*$|^别[^，。,]{1,6}了[。!！]*$"
    r"|^我就(?:说|知道)"
)
ZH_EXCLAIM = re.compile(r"(?:太|真|好)[^，。,]{0,8}[了啊呀吧][!！]*$|[!！]{1,}$")
EN_FIRST = re.compile(
    r"^(?:i|i'm|im|i've|ive|i'd|id|i'll|my|we|we're|we've|our|me|myself|mine)\b"
    r"|^(?:[\w'-]+\s+){0,3}for me\b"
    r"|^[\w'-]+(?:\s+[\w'-]+){0,2}\s+(?:is|are)\s+my\b"
    r"|^(?:the|a|an)\s+[\w'-]+(?:\s+[\w'-]+)?\s+(?:i|i'm|we|we're)\b"
    r"|^(?:(?:a\s+)?(?:big|huge|massive|great)\s+)?fan of\b"
    r"|^(?:when|whenever|while)\s+(?:i|i'm|we)\b"
    r"|^(?:just\s+)?got (?:engaged|married|divorced|promoted|hired)\b"
    r"|^(?:just\s+)?(?:moved|relocated|started|joined|switched|hoping to|trying to|planning "
    r"to|learning|working (?:on|as|at|in)|saving (?:up )?for|living in|based in)\b",
    re.I,
)
EN_OTHER = re.compile(
    r"^(?:he|she|they|he's|she's|they're|his|her|their|it|its|it's|this|that|there|"
    r"you|you're|your|the (?:user|customer|client|team|company|boss|manager)|"
    r"everyone|someone|people|[A-Z][a-z]+ (?:said|says|thinks|wants|told|has|loves|"
    r"likes|prefers|hates|lives|works))\b",
    re.I,
)
RELATION = (
    r"(?:wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?|spouse|mum|mom|mother|dad|"
    r"father|parents?|brother|sister|sibling|son|daughter|kids?|children|child|baby|friend|"
    r"friends|colleague|coworker|co-worker|team|teammate|boss|manager|mentor|supervisor|"
    r"advisor|neighbou?r|roommate|flatmate|landlord|client|customer|grandma|grandpa|"
    r"grandmother|grandfather|aunt|uncle|cousin|niece|nephew|doctor|therapist|teacher|"
    r"students?|dog|cat|pet|rabbit|puppy|kitten|horse|bird|fish|hamster|parrot|company|"
    r"employer)"
)
EN_RELATION_DOES = re.compile(rf"^(?:my|our)\s+(?:\w+\s+)?{RELATION}s?\b(?!'s name)", re.I)
EN_RELATION_IS = re.compile(
    rf"^(?:my|our)\s+(?:\w+\s+)?{RELATION}s?(?:\s+(?:at|from|in|on)\s+\w+)?"
    r"(?:(?:'s|s)?\s+name(?:'s|\s+is)|\s+(?:is\s+)?(?:called|named)|\s*叫)\s*\S"
    r"|^(?:my|our)\s+(?:\w+\s+)?" + RELATION + r"s?(?:\s+(?:at|from|in|on)\s+\w+)?"
    r"\s*(?:'s|is|are|was|=|:|,|是)\s*"
    r"(?:an? (?:man|woman|guy|lady|person|bloke|girl|boy)\s+(?:called|named)\s+)?"
    r"(?:(?-i:[A-Z])|dr\b|prof\b|professor\b|mr\b|ms\b|mrs\b)",
    re.I,
)
ZH_FIRST = re.compile(
    r"^(?:(?:周末|平时|平常|工作日|每天|每周|晚上|早上|一般|通常|在家|上班时)[，,]?)?(?:我|咱|本人|俺)"
)
ZH_RELATION = (
    r"(?:妈妈|妈|母亲|爸爸|爸|父亲|父母|老婆|老公|妻子|丈夫|爱人|对象|男朋友|女朋友|儿子|女儿|孩子|"
    r"朋友|同事|同学|哥哥|姐姐|弟弟|妹妹|老板|领导|上司|经理|导师|老师|室友|邻居|家人|爷爷|奶奶|"
    r"外公|外婆|团队|客户|狗|猫|宠物|兔子)"
)
ZH_RELATION_DOES = re.compile(rf"^我(?:的|家|们)?(?:的)?{ZH_RELATION}")
ZH_RELATION_IS = re.compile(
    rf"^我(?:的|家的?|养的|们的?)?(?:[^，。,]{{0,4}}){ZH_RELATION}(?:是|叫|名字)"
)
ZH_OTHER = re.compile(r"^(?:他|她|它|他们|她们|你|您|大家|别人|有人|这|那)")
EN_IMPERATIVE = re.compile(
    r"^(?:please\s+|pls\s+|kindly\s+)?(?:(?:always|never|just|also|only)\s+)?"
    r"(?:don'?t|do not|never|stop|avoid|use|answer|reply|respond|write|keep|be|speak|talk|"
    r"call|address|explain|include|skip|give|show|tell|make|put|schedule|book|send|translate|"
    r"summari[sz]e|summary|list|fix|draft|rewrite|rephrase|compare|try|continue|go|"
    r"proceed|refine|help|find|create|generate|plan|check|review|add|remove|format|read|"
    r"open|convert|calculate|edit|proofread|shorten|expand|change|let's|lets|recommend|"
    r"suggest|remind|bring|mention|share|assume|treat|stick|default|sort|ask|move|"
    r"no|nothing|nobody|none)\b",
    re.I,
)
EN_BOUNDARY_START = re.compile(
    r"^(?:please\s+)?(?:don'?t|do not|never|stop|avoid|no|nothing|nobody|none)\b", re.I
)
EN_STANDING = re.compile(
    r"\b(?:always|never|from now on|going forward|in (?:the )?future|from here on|"
    r"every ?time|each time|whenever|when(?:ever)? you|by default|at all times|ever|"
    r"anymore|any more|with me|to me|call me|address me|as if i|like i'?m|"
    r"your (?:answers?|replies|reply|responses?|messages?|emails?|explanations?|code|tone)|"
    r"(?:answers?|replies|responses)\b(?! to)|british|american|metric|imperial|spelling|"
    r"emojis?|exclamation|bullet points?|jargon|before \d|after \d|on (?:mon|tue|wed|thu|"
    r"fri|sat|sun)\w*days|weekends?|mornings|evenings)\b",
    re.I,
)
EN_ONE_OFF_SENTENCE = re.compile(
    r"^just the\b|\b(?:for now|this time|just this once|"
    r"for this (?:one|answer|question|reply|message|time)|just for this|right now|"
    r"only this time)\b",
    re.I,
)
EN_DEICTIC = re.compile(
    r"\b(?:this|that|these|those|it|them|above|below|the following|the (?:first|second|"
    r"last|next|same|previous)|section|part|paragraph|chapter|again|now|today|tonight|"
    r"for this|this time|just this once|for now|one more|once more|another)\b"
    r"|\b(?:shorter|longer|simpler|more formal|less formal)\b",
    re.I,
)
ZH_IMPERATIVE = re.compile(
    r"^(?:请|麻烦|你)?(?:以后|今后|之后|从现在开始|从今以后|每次|总是|一直)?(?:都|也|请)?"
    r"(?:不要|别|千万别|千万不要|不用|不准|禁止|用|回答|回复|说话|叫我|称呼我|帮我|给我|把|写|"
    r"翻译|继续|讲讲|讲|说说|说|介绍|推荐|列|算|改|总结|解释|检查|看看|看一下|查|找|做|安排|"
    r"提醒|发|生成|再|重新|接着)"
)
ZH_BOUNDARY_START = re.compile(
    r"^(?:请|麻烦|你)?(?:以后|今后|之后)?(?:都|也)?(?:不要|别|千万别|千万不要|不准|禁止|不用)"
)
ZH_STANDING = re.compile(
    r"以后|今后|之后都|从现在开始|从今以后|每次|总是|一直|始终|永远|默认|都用|的时候|叫我|称呼我|跟我说话|对我"
)
ZH_DEICTIC = re.compile(r"这|那|上面|下面|刚才|一下|第[一二三四五六七八九十\d]+|再|继续|先|这次")
EN_TRANSIENT = re.compile(
    r"\b(?:today|tonight|right now|at the moment|currently at|this (?:morning|afternoon|"
    r"evening|week|weekend)|tomorrow|yesterday|just now|later today|for now|until (?:mon|tue|"
    r"wed|thu|fri|sat|sun)\w*|until (?:tomorrow|tonight|next week)|swamped|slammed)\b"
    r"|^(?:i'?m|i am|im)\s+(?:so\s+|very\s+|a bit\s+|a little\s+|kind of\s+|kinda\s+|"
    r"really\s+|feeling\s+|just\s+)*(?:tired|exhausted|hungry|thirsty|sleepy|busy|sick|ill|"
    r"sad|happy|bored|back|here|done|ready|confused|sorry|not sure|unsure|late|stuck|lost|"
    r"curious|excited|annoyed|angry|upset|glad|fine|ok|okay|good|great|wondering|asking|"
    r"looking|going|about to|heading|on my way|at the|driving|waiting|sitting|"
    r"eating|cooking|testing|trying this|down|anxious|nervous|stressed|worried)\b"
    r"|^(?:i|im|i'm)\s+(?:feel|felt)\b|^feeling\b",
    re.I,
)
EN_PAST_EVENT = re.compile(
    r"^(?:yesterday|last (?:week|night|year|month|weekend)|the other day|earlier|once)\b"
    r"|^i\s+(?:just\s+|finally\s+|already\s+)?(?:went|visited|saw|met|bought|watched|read|"
    r"ate|had|got back|came|tried|did|made|found|heard|forgot|lost|called|told|asked|shared|"
    r"sent|posted|uploaded|hired|entered|harvested|fixed|finished|submitted|booked|ordered|"
    r"emailed|texted|won|passed|failed|launched|released|signed|received|paid)\b"
    r"|^(?:i|we)\s+\w+ed\b[^.]*\b(?:on (?:mon|tue|wed|thu|fri|sat|sun)\w*|yesterday|last "
    r"(?:week|night|month|year)|this morning|ago)\b",
    re.I,
)
EN_HYPOTHETICAL = re.compile(r"^(?:if|unless|suppose|imagine|what if)\s+i\b|\bi wish\b", re.I)
EN_ONE_OFF_WANT = re.compile(
    r"^(?:i'd|id|i would) love to\b(?:[,.!]|$)|"
    r"^(?:i|i'd|id)\s+(?:(?:would|'d)\s+)?(?:want|need|like|would like|'d like|love)\s+"
    r"(?:you to|a|an|the|some|your|help|this|that|it|more|another|something|to (?:know|"
    r"see|ask|have|check|try|read|hear))\b",
    re.I,
)
EN_REACTION = re.compile(
    r"^(?:i|we)\s+(?:really\s+|just\s+|totally\s+|absolutely\s+)?(?:love|like|hate|prefer|"
    r"enjoy|want|need|adore|dislike)\s+(?:it|this|that|them|these|those|the (?:first|second|"
    r"last|new|other)|your|this|one)\b",
    re.I,
)
ZH_TRANSIENT = re.compile(
    r"今天|今晚|明天|昨天|刚才|刚刚|刚到|这会儿|此刻|一会儿|待会|等会|"
    r"(?:饿|累|困|烦|头疼|头痛|不舒服|生病|感冒)(?:了|死|啊)|好累|在开会|在路上|在忙"
)
ZH_DURABLE_VERB = re.compile(
    r"住|生活|工作|上班|养|叫|^我(?:现在|目前|已经)?(?:是|当|做|读|学|用)"
    r"|在.{1,8}(?:公司|大学|学校|医院|银行)"
)
ZH_PAST_EVENT = re.compile(
    r"^(?:昨天|上周|上个月|前几天|那天)|^我(?:昨天|上周|刚才)?(?:去了|看了|买了|吃了|见了)"
    r"|^我(?:去年|前年|以前|之前|上次)|(?:下周|下个月|这个周末|端午|中秋|春节|国庆|假期|五一)"
    r"(?![^。]*(?:每|一般|通常|总是|都))"
)
ZH_ONE_OFF_WANT = re.compile(
    r"^我(?:想要|需要|要)(?:一|个|份|杯|些|你|这|那)|^我(?:想|要|想要)(?:订|买|点|问|看看|试|找|借)"
)
ZH_REACTION = re.compile(r"^我(?:很|也|真|超|挺)?(?:喜欢|爱|讨厌)(?:这|那|它|你)")
REVOCATION = re.compile(
    r"\b(?:no longer|not any ?more|(?:don'?t|do not|doesn'?t|won'?t|can'?t|am not|'m not|"
    r"is not|isn'?t|ain'?t|never)\b[^.?!]{0,40}\b(?:any ?more|these days|now)\b|"
    r"scratch that|never ?mind|disregard|ignore what i|forget (?:that|about|what|my|"
    r"everything|it|the)|(?:that|this)(?:'s| is) no longer|not true any ?more|"
    r"stopped (?:\w+ing)|quit (?:\w+ing)|gave up (?:\w+ing)?)\b"
    r"|不再|别再|忘掉|忘记我|忘了我|忘了吧|别记|不用记|取消|作废|"
    r"(?:现在|最近|已经|早就|早已|如今|目前)(?:都)?(?:不|没)(?:再)?[^，。,]{1,12}了",
    re.I,
)
TAIL = re.compile(
    r"[\s,;:-]*\b(?:just so you know|fyi|btw|lol|haha|just saying|for the record)\b[\s.!]*$"
    r"|[，,\s]*(?:哈|哈哈|啊|哦|呀|嘛)[。!！~]*$",
    re.I,
)
POLITE_STANDING = re.compile(
    r"^(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:always|never|from now on|"
    r"(?:\w+\s+){1,6}(?:from now on|by default|going forward|in (?:the )?future|always|"
    r"every time|with me)\b)",
    re.I,
)
EN_OPINION = re.compile(
    r"^(?:i|we)\s+(?:(?:really|just|kind of|kinda|still|also)\s+)?(?:think|believe|guess|"
    r"suppose|reckon|feel like|agree|disagree|understand|see|know|mean|meant|wonder|"
    r"was wondering|doubt|hope (?:so|not|that)|(?:do not|don'?t|didn'?t)\s+(?:understand|"
    r"know|get|think|see|mean|agree|remember))\b"
    r"|^(?:i'?m|i am)\s+(?:not\s+)?(?:sure|certain|convinced|confused|wondering)\b",
    re.I,
)
EN_DIALOGUE = re.compile(
    r"^(?:let me|let's|lets|i'll|i will|i'm going to|i am going to|i'm gonna|i tried|"
    r"i've tried|i have tried|i just tried|we should|we could|we need to|we'll|i should|"
    r"i could|i might|i may|i can(?!'t|not)|i'd say|i have a (?:question|doubt|request|favou?r)|"
    r"my (?:question|point|idea|request|problem|issue) (?:is|was)|i want to ask|"
    r"i'd like to ask|i was going to)\b"
    r"|^i(?:'ve| have)(?: got)?\s+(?:a|an|one|two|three|some|another|a few|\d+)\s+"
    r"(?:\w+\s+)?(?:questions?|options?|ideas?|problems?|issues?|doubts?|suggestions?|"
    r"requests?|concerns?|thoughts?|updates?|choices?|versions?|drafts?)\b"
    r"|^(?:i|we)\s+(?:\w+\s+)?need\b(?![^.]*\b(?:always|never|every|usually|in general)\b)",
    re.I,
)
EVENT = (
    r"(?:meeting|appointment|flight|call|interview|deadline|exam|test|class|train|bus|date|"
    r"party|dinner|lunch|session|presentation|demo|shift|game|match|trip)"
)
EN_SCHEDULED = re.compile(
    rf"\b{EVENT}\b[^.]*?\b(?:at \d|\d+\s*(?:am|pm)|on (?:mon|tue|wed|thu|fri|sat|sun)\w*|"
    r"tomorrow|tonight|next (?:week|month|monday|friday)|this (?:week|afternoon|evening)|"
    r"later|soon|in \d+|by (?:mon|tue|wed|thu|fri|sat|sun|tomorrow|tonight))"
    rf"|\b(?:at \d|\d+\s*(?:am|pm)|on (?:mon|tue|wed|thu|fri|sat|sun)\w*|tomorrow)\b[^.]*?"
    rf"\b{EVENT}\b",
    re.I,
)
EN_PROBLEM = re.compile(
    r"\b(?:throws?|threw|crash(?:es|ed|ing)?|broke|broken|fails?|failing|failed|errors?|"
    r"bug|keeps? \w+ing|(?:is|are|was) (?:running|acting|being|getting) \w+|not working|"
    r"(?:does|did|do|will|wo)n'?t (?:work|start|load|open|run|compile)|getting an? \w+|"
    r"stuck|jamm(?:ed|ing)|almost done|nearly done|still (?:working|waiting|trying))\b",
    re.I,
)
ZH_TASK_TALK = re.compile(
    r"^我(?:觉得|认为|感觉|猜|估计|同意|明白|懂|知道了|不太明白|不明白|不懂|不知道|不太懂|"
    r"不确定|试试|试一下|试了|刚试|想问|有个问题|有一个问题|有个想法|有几个问题|需要)"
    r"|报错|出错|坏了|卡了|有点卡|很卡|崩了|崩溃|不行|打不开|出问题|失败|没反应"
    r"|(?:下午|上午|晚上|中午|明早|\d+点|周[一二三四五六日天]|星期)[^。，,]{0,8}"
    r"(?:会|开会|面试|考试|航班|飞机|约|课|火车)"
)
TERSE_EN = re.compile(r"^[a-z][a-z' -]{2,40}[.!]?$", re.I)
TERSE_BLOCK = re.compile(
    r"\b(?:please|again|more|less|next|shorter|longer|better|worse|done|go|try|continue|"
    r"keep|stop|start|yes|no|maybe|ok|sure|later|now|here|there|one|this|that|it|what|"
    r"why|how|remember|note|wait|hold|same|fine|thanks|thank|wow|cool|nice|right|wrong|"
    r"true|false|agree|please|correct|exactly|indeed|noted|understood|welcome|sorry|not|"
    r"really|very|too|much|any|some|other|another|else|also|just|only|still|yet|anyway|"
    r"whatever|nothing|something|everything|all|both|either|neither|first|second|last)\b",
    re.I,
)
TERSE_ZH = re.compile(r"^[\u3400-\u9fff]{2,4}[。.]$")
TERSE_ZH_BLOCK = re.compile(
    r"算了|随便|另|再|还有|然后|没事|可以|不用|一样|对的|是的|一下|这|那|啥"
)
TERSE_ONE_WORD = re.compile(
    r"(?:arian|ian|ist|ese|ish|ic|ive|less|free|handed|holic|phobic|sexual|binary)$", re.I
)
