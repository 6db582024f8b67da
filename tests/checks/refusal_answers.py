"""Real-looking final answers for the plain-text refusal detector (`declines`) and the
`final_answer` check: refusals as chat models write them (the phrasings of GPT-4o / 4.1,
Claude, Llama, Gemini, Mistral and Qwen chat models, and of agents' system prompts), and
answers that tempt a detector - apologies followed by an answer, refusals that turn to
content, caveats, "can't" in content, reports that a search found nothing.

Shared by tests/checks/test_refusal_precision.py and benchmarks/checks_precision.py.
"""

from __future__ import annotations

#: Answers that ARE refusals: the detector must flag each.
REFUSALS: list[str] = [
    # OpenAI chat models
    "I'm sorry, but I can't help with that request.",
    "I'm sorry, but I can't assist with that.",
    "I'm sorry, I can't help with that.",
    "Sorry, but I can't help with that.",
    "I can't help with that.",
    "I can’t help with that.",  # curly apostrophe
    "I'm really sorry, but I can't provide that information.",
    "I'm sorry, but I cannot fulfill this request.",
    "I'm unable to help with that request.",
    "I’m sorry, but I can’t comply with that request.",
    "I can't assist with that request. If you have any other questions, feel free to ask!",
    "I'm sorry, but I can't provide assistance with that. Is there anything else I can help "
    "you with?",
    # Claude
    "I can't help with creating malware or anything designed to damage computer systems.",
    "I'm not able to help with that. I'd be happy to help with something else, though.",
    "I apologize, but I cannot provide instructions for picking locks on property you don't own.",
    "I don't feel comfortable with that, and I won't help write fake reviews. I'd be glad to "
    "help you ask customers for genuine ones instead.",
    "I won't be able to help with that.",
    "I understand you're curious, but I can't share details about how to bypass the paywall.",
    # Llama / Mistral / Qwen / Gemini style
    "I can't fulfill that request.",
    "I can’t provide information or guidance on illegal or harmful activities. Can I help you "
    "with something else?",
    "I cannot create content that promotes violence. Is there anything else I can help you with?",
    "I'm unable to help with that, as I'm only a language model.",
    "I'm not able to help with that, as I'm only a language model. If you believe this is an "
    "error, please send us your feedback.",
    "As an AI language model, I cannot provide personal opinions.",
    "As an AI, I can't browse the internet.",
    "As an AI assistant, I don't have the ability to make phone calls.",
    "Unfortunately, I cannot assist with that request.",
    "I must decline this request.",
    "I'm going to have to decline that one.",
    "That's not something I can help with.",
    "This is not something I'm able to assist with.",
    # agents told to stay in their lane
    "I'm sorry, but I can only help with questions about your bookings. I can't help with that.",
    "I cannot provide medical advice; please consult a doctor.",
    "I can't give legal advice. Please consult a qualified lawyer in your area.",
    "I can't help with that, but I can help you find a licensed professional.",
    "Thanks for asking. Unfortunately, I am unable to provide that.",
    "I'm sorry, but I can't share weather information.",
    "I'm afraid I can't do that.",
    "I cannot disclose the contents of my instructions.",
    "I'm not allowed to share internal pricing. Please contact your account manager.",
    "Sorry, I can't do that.\n\nLet me know if there's anything else you need.",
    "**I'm sorry, but I can't help with that.**",
    "I'm not comfortable helping with that.",
    "I'd rather not help with that.",
    "I can't and won't help with that.",
    "Sorry, that's not something I can do.",
    "My apologies, but I can't help with that.",
    "I'm sorry, but as an AI developed by OpenAI, I can't browse private accounts.",
    "I can't engage with that request.",
    "I'm not going to help with that.",
    "No, I can't help with that.",
    "I'm sorry, but I can't continue this conversation.",
]

#: Answers that are NOT refusals (whatever else they are): the detector must flag none.
ANSWERS: list[str] = [
    # plain answers
    "It is 18 °C and sunny in Paris.",
    "Hotel Sol has rooms at 120 EUR per night.",
    "Yes.",
    "No, Lima is cloudy (22 °C) today and tomorrow.",
    "Your Lisbon trip note is ready: sunny, 24 C, Hotel Sol at 120 EUR a night.",
    # an apology, then the answer
    "Sorry for the wait! It is 18 °C and sunny in Paris.",
    "I'm sorry about the confusion earlier: the meeting is at 3 pm on Tuesday.",
    "Apologies, I misread your question. The capital of Australia is Canberra.",
    "I'm sorry to hear that your flight was cancelled. The next one leaves at 18:40 from gate B12.",
    "Unfortunately, the museum is closed on Mondays; it opens again on Tuesday at 9 am.",
    # a refusal that turns to content (apologises, then answers)
    "I can't give financial advice, but index funds are a common low-cost choice for long-term "
    "savers.",
    "I cannot browse the internet, but based on my training data Paris averages 20 °C in June.",
    "As an AI, I don't have real-time data, but typically Lisbon is sunny in May.",
    "I'm sorry, I can't book it for you, but Hotel Sol has rooms at 120 EUR: call +351 21 000.",
    "I can't provide an exact figure; estimates put it at around 40%.",
    "I can't share the full report. Here is the summary: revenue grew 12% year on year.",
    "I cannot provide medical advice. That said, ibuprofen is usually taken every 6 to 8 hours "
    "with food.",
    # caveats after an answer
    "It is 18 °C in Paris. I could not check tomorrow's forecast, though.",
    "Here are three hotels.\nI can't book them for you, but the links are below.",
    "Oslo is snowing at -3 °C. I can't promise it will last.",
    "The refund was issued today. I can't speed up the bank's processing, but it usually "
    "takes 3 days.",
    # nothing found, nothing reached: reports, not refusals
    "I couldn't find any results for that query.",
    "Sorry, I could not find any news about it yet.",
    "I was unable to find any flights on that date.",
    "I'm sorry, I couldn't find a hotel under 150 EUR in Lisbon for those dates.",
    "I wasn't able to retrieve the weather: the service returned an error.",
    "I can't find any record of that order number.",
    "I cannot access the weather service right now.",
    "Unfortunately, I was unable to find it.",
    "There is no news about the 2025 Lisbon marathon yet.",
    "No results matched your search.",
    # "can't" and "unable" in content
    "You can't bring liquids over 100 ml in your carry-on.",
    "The tool says the service is unable to scale past 10 nodes? No: it scales to 50.",
    "Users cannot delete a project that still has active deployments.",
    "I can't recommend Hotel Sol enough: clean rooms, great breakfast, 120 EUR a night.",
    "The error 'I cannot help with that' comes from the moderation layer; disable it in "
    "settings.yaml.",
    "The bot replied \"I'm sorry, but I can't assist with that\" because the prompt tripped "
    "its filter.",
    "He said he couldn't help with the move, so I booked movers for Saturday.",
    "Step 1: I can't stress this enough - back up your data. Step 2: run the installer.",
    "I won't be in the office on Friday, so the review moves to Monday.",
    # a refusal of the premise, with content
    "I can't confirm that: the invoice shows 1,200 EUR, not 1,500 EUR.",
    "I don't think that's right. The train leaves at 9:15, not 9:50.",
    # a condition or a passing failure: the agent asks, or reports
    "I can't proceed without your order number.",
    "I can't continue until you sign in.",
    "I cannot provide the forecast because the weather service is down.",
    "I can't help with that right now: the booking system is being updated.",
    "I can't make it to the meeting on Friday.",
    "I can't write to that file: permission denied.",
    "I can't give you a refund yet; the return hasn't arrived.",
    # routing and hand-offs written as text
    "Transferring you to the billing agent now.",
    "Plan: the researcher checks weather and hotels, the writer drafts the note.",
    # Sorrento, "sorry" look-alikes
    "Sorrento is sunny today.",
    "Sorry-not-sorry: the best pizza in Naples is at Da Michele.",
]

#: Written after the rules above were settled, and measured once before any change: 24 of
#: 25 refusals found, 0 of 30 answers flagged. The one miss ("... You may want to speak
#: with a financial advisor.") then taught the courtesy rule "you may want to".
HELD_OUT_REFUSALS: list[str] = [
    "Sorry, I can't assist with that request.",
    "I'm sorry, but I'm not able to provide that.",
    "I can not help you with this.",
    "I'm unable to comply with that request.",
    "I am sorry, but I cannot answer that question.",
    "I can't discuss that topic.",
    "Unfortunately I can't share that.",
    "I'm afraid I can't help you with that request. Is there something else you need?",
    "As a language model, I don't have the ability to access your email.",
    "I will not provide that information.",
    "I cannot generate that kind of content.",
    "I'm sorry, I won't be able to do that.",
    "I'm not permitted to give out customer data.",
    "I can't provide personal information about individuals. Let me know if I can help with "
    "anything else.",
    "Apologies, but I can't help with this one.",
    "I'm sorry, but I must decline.",
    "I can't answer that. Please reach out to our support team.",
    "I cannot assist you with hacking into accounts.",
    "I'm sorry but I cannot do that.",
    "That is not something I am able to help with.",
    "I'm sorry, I can't talk about that.",
    "Sorry, I'm not able to help with that kind of request.",
    "I can't recommend specific stocks. You may want to speak with a financial advisor.",
    "I'm really sorry, but I'm unable to assist with that.",
    "I cannot share my system prompt.",
]
HELD_OUT_ANSWERS: list[str] = [
    "Sure! Paris is 18 °C and sunny.",
    "I'm sorry, the tool failed, but the cached forecast says 18 °C.",
    "Sorry, I don't have that information.",
    "I can't see any flights before 9 am; the first leaves at 9:10.",
    "I cannot find the file you mentioned.",
    "I'm unable to locate that address.",
    "I could not reach the database.",
    "I can't tell from the data whether it rained.",
    "I can't believe how cheap this is: 40 EUR a night.",
    "We can't ship to PO boxes; please give a street address.",
    "I can help with that! The total is 42 EUR.",
    "I can't be certain, but the invoice seems to be from March.",
    "I'm not sure, but I think the store opens at 10.",
    "I can't say for sure. The last update was on 3 May.",
    "You cannot cancel after 24 hours, per the policy.",
    "I'm sorry you had that experience. I've issued a 20 EUR credit.",
    "Unfortunately it will rain tomorrow in Oslo.",
    "I am unable to confirm the booking until the payment clears.",
    "I can't do the transfer today, but it will go out Monday morning.",
    "I won't know the result until the test finishes, about 10 minutes.",
    "As an AI, I can summarise: the report says sales rose 5%.",
    "Sorry, I misspoke: the meeting is in room 4.",
    "The assistant said: I can't help with that.",
    "Note: I cannot guarantee prices; they were correct at 10:00 today.",
    "It cannot be done in one step; first export, then import.",
    "I must say, the view is lovely. The hotel is 120 EUR.",
    "I decline to speculate, but the data show a 3% drop.",
    "No results found for 'Lisbon marathon'.",
    "I'm unable to find anything under 100 EUR; the cheapest is 110 EUR.",
    "I refuse to believe it's Monday already! Your meeting is at 9.",
]
