"""The held-out files were written before any tuning of the memory against them, and are
frozen: a changed checksum means someone edited a held-out item (never change code or a
held-out file to make a held-out item pass; add a new item to the dev split instead)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from evals.dialogue import DIALOGUE_DIR
from evals.scenario import HELD_OUT_DIR

ROOT = HELD_OUT_DIR.parents[1]

FROZEN = {
    "scenarios/heldout/heldout_diet_change_across_conversations.json": (
        "639d909be9844ca0917378ad5041dd27a9af310c201efbb77403f8180db69c91"
    ),
    "scenarios/heldout/heldout_driving_then_cooking_zh.json": (
        "880bd7ba86f7c45c38e38166df35d80654aca356e50fca1cfa6330deb5e6d805"
    ),
    "scenarios/heldout/heldout_secrets_forget_zh.json": (
        "8b0550cb9ff2c84d22a5b09cea2c66d387cf36a664543f1856823611e80ca1b3"
    ),
    "scenarios/heldout/heldout_two_neighbours.json": (
        "9aab2dd739edd9e40ef8743cf5ae3ec74a8978b005d537bd3db0ceb44d9f7d79"
    ),
    "scenarios/heldout/heldout_wedding_plan.json": (
        "e80cb9a74e0c04001693102adde244328479957c412928d198bf96e3e30f1916"
    ),
    "dialogues/heldout/colleagues_migration_zh.json": (
        "6aa8c1f7bdc6396d861996f64e6cb738476183f0f06fbccf252699011d74a62c"
    ),
    "dialogues/heldout/engineers_oncall_rotation.json": (
        "60fdfbb99782e6ecbf509523d2430c4551ec09356d3eb8830e2e754d40291ced"
    ),
    "dialogues/heldout/friends_pottery_porto.json": (
        "bbc2e6739558ae67f8bfdc5d282a266a68bee8ae5d78e96becc3e6e8d43e25d6"
    ),
}


ARCHIVE_FROZEN = {
    "archives/heldout/allotment_plot.json": (
        "3d9f0551562b2f5426ac171c47de3ab81c9c4de90418cf30b5c80a3c6bce7c2e"
    ),
    "archives/heldout/antwerp_anniversary.json": (
        "454e7c89d2cc35b2b756fa8b488a77bb96e3fc812ea8d3c3c00d1654fa214276"
    ),
    "archives/heldout/back_garden_hedge.json": (
        "42cea5278477b34037ec209d40c48a904c705051c6a20bfe6ca13b7566823060"
    ),
    "archives/heldout/back_pain_physio.json": (
        "8606a94a411af95a3f53a288085820d1052417ecf22949588183e73c843f44c1"
    ),
    "archives/heldout/bathroom_repairs.json": (
        "dcc15199def6fb8d28c845d561470a4e28763903801df3c3bed27ecfce445dda"
    ),
    "archives/heldout/biscuit_beagle_vet.json": (
        "1dc1c7529af8b5f2afcb930524785296c0ac192ff767905bd5da4ce112004814"
    ),
    "archives/heldout/book_club.json": (
        "59d35e07fc319c091d0387fffc694ca969c1435a342ca4f54c821e12d7f9393a"
    ),
    "archives/heldout/brother_wedding_zh.json": (
        "1e0c7e178aa875a69121cb0302a4afcbcd89935f7715c17db446e4c3c6a8c763"
    ),
    "archives/heldout/budget_tracker_kasboek.json": (
        "ba7569f13bcd833143faf3028818e8b4d7adfeb1000ee7d0beff4e9cf95d9c67"
    ),
    "archives/heldout/car_auris_to_ev.json": (
        "3a943b2f07223648b44e7edbf2e5038bfca6cc126ede5a5e4322827cb393907f"
    ),
    "archives/heldout/cargo_bike.json": (
        "852a95a6401790753e6c6e985d865dcb5746b7313f24b5a8d33d41b6c32459b6"
    ),
    "archives/heldout/chengdu_trip_zh.json": (
        "be9ebfbd5fc2c14f3854092546b525496f9fb33b33c2ea0b16c0240b726dcc7a"
    ),
    "archives/heldout/chili_crisp_stall.json": (
        "c4f41bc1a27b4fe4067f4567395cb44cb30a655b6f9b939e70a191d11b63387e"
    ),
    "archives/heldout/chili_oil_recipe_zh.json": (
        "1d5253e684372603b6a132ac4db0a792b6bf648dd75e61d8e82faabc042b8ba0"
    ),
    "archives/heldout/china_bank_phone_zh.json": (
        "cf86ca44a2b8292d97d7b6d3d22ee38e63027f9dea36f70edd9e1eb3c95f21c2"
    ),
    "archives/heldout/chinese_novels_zh.json": (
        "c153b4e396a516beed4d4232202a6093074b40cccef6d2dc35a5850f3acd96cf"
    ),
    "archives/heldout/chinese_school_zh.json": (
        "1c98ecffa1bf2b4b2dfc4f1032f4e775426a73f2a462ec966bcd5442416d8f78"
    ),
    "archives/heldout/christmas_dinner.json": (
        "df4afd3bc34c0ec5fffb231e2a5ebd5bc1aa66e5819e5f6b71451be28cad4fde"
    ),
    "archives/heldout/code_review_english_zh.json": (
        "54a1d845029de32c5da22b0d0f2e414f9afc0b4a7e0058b7a73396267846e982"
    ),
    "archives/heldout/couple_talk_zh.json": (
        "d55a6a1d05f80063d96542a78dd13b410c84899a0595f6afe2649bb0465685e4"
    ),
    "archives/heldout/dad_smartphone_zh.json": (
        "5b7b2ace5a7294fcbdf0907488fec3f3d6d5d6b088db73939e09ebb48c21b0c2"
    ),
    "archives/heldout/daniel_learns_chinese_zh.json": (
        "1e045194a1de4a65214d9a62da6b2dc18f11f122164963625c6a449c0129fcfe"
    ),
    "archives/heldout/daniel_wedding_speech.json": (
        "cce36bc1fb351d3887f58631ff4ac22d5cfd908fd6146c03cb4d6856ff5debac"
    ),
    "archives/heldout/dentist_zh.json": (
        "5c0e17b9678a5a7bfce357cb444be535e336aedbf6163978f8456df4a9c81633"
    ),
    "archives/heldout/doudou_corgi_zh.json": (
        "b57ea1252af890182ee1b48862e7a25429126a015d80f5259c249a27c778c309"
    ),
    "archives/heldout/dutch_b1_exams.json": (
        "8dca531208312b7f7fa0c0f30dabcf5a7e34a7a0da9214f71659495c76ca4eb3"
    ),
    "archives/heldout/energy_contract.json": (
        "59dfd65599feda3280c88ee1b316f2f7c870cf9efe3ae4cbb560bdcbfc439779"
    ),
    "archives/heldout/fitness_strength_zh.json": (
        "4b98d90d6f7d2aea661dd1a9039ddb6b082e763dc896061ed2e8d11d08e60a54"
    ),
    "archives/heldout/friend_visit_zh.json": (
        "40486b87996939f3619497bc04f2bf38d8003aeda78a14c1e9fd54360d49b07d"
    ),
    "archives/heldout/garden_moisture_sensor.json": (
        "10bd868fef5e5b2c912eeadd47b26af6059bb41f6b49ddd3ea9751c395833f18"
    ),
    "archives/heldout/heating_and_heat_pump.json": (
        "284c21516c932b092340d7db9349ec724e452bd11ba60c6ae67608ab049ef9c2"
    ),
    "archives/heldout/home_network.json": (
        "8de4b8313f86caa5a88bc23f0a60c365f628a34f3aa1ff3cb54bda12c4c76e8f"
    ),
    "archives/heldout/household_budget.json": (
        "bd0d0dd7dd49eefd998c28731c36d4819f1b7354e3f9100fb2ef677d680598d9"
    ),
    "archives/heldout/job_change_feelings_zh.json": (
        "52402bc158dbbb386d78ff204bab27be470c5d45b025d0664c605ed2bc605e8f"
    ),
    "archives/heldout/job_search_tideline.json": (
        "c2a192d0541140205affa5f1e36e0d2bbf21f6a65ec32877f4eed908ceadf48a"
    ),
    "archives/heldout/kafka_consumer_lag.json": (
        "13efc8d7692c319063e5b7409a75a8473e513fea7b1da21a8b1c2f4bc0a0e7b2"
    ),
    "archives/heldout/kids_china_visa_zh.json": (
        "227dfdbd41bf6f0b8d07be357e360ddef0408bbfa5ce4c7be1b76f09e33acd30"
    ),
    "archives/heldout/learning_go.json": (
        "222b93f01dee90b3a7a2b3a66d3cf70873dafab4908f4179482a5236ac28c13f"
    ),
    "archives/heldout/leo_football.json": (
        "42cb42c5590952530a4ee53245447bf65109b4072d3ddd50f7790b59a5f05a38"
    ),
    "archives/heldout/leo_pocket_money.json": (
        "c2ea329b705662c7063e42a6439e8b7630da9b938078edda101e24512b124bce"
    ),
    "archives/heldout/leo_school.json": (
        "a62ff0122c97203ef010784fbdb78d4918587e23aa82ea237cb82d2447907434"
    ),
    "archives/heldout/leo_scratch_game.json": (
        "8dfa091c9756e6188b24ecaf085b678b93030a9b59040b118fa2a5e9c4c6e002"
    ),
    "archives/heldout/lisbon_trip.json": (
        "1d22946fdc833133e6b6e048618e1352d8b480854f2fec58e75c8c13e4a761f3"
    ),
    "archives/heldout/mala_jar_labels.json": (
        "8535681d1ca0df66448f52e79b377bd4a3bb66a5a2f46a14b36496199b546289"
    ),
    "archives/heldout/mia_kindergarten.json": (
        "4bc1e471d53e4abb8a1a6cd6dc42d1b46f04d42330c4512ec604bdb7fa7034a6"
    ),
    "archives/heldout/mia_tantrums_zh.json": (
        "b200990e4e993db81c12f3a579db4b6abcad1b9a7cb3279bbd46be40d25ca547"
    ),
    "archives/heldout/mom_blood_pressure_zh.json": (
        "f3927c59e645f15bee5c3a93b484c93052720c3492c7126d141f672d2afd8534"
    ),
    "archives/heldout/mom_schengen_visa_zh.json": (
        "1d7f3f561c2660bcb07defe5f7e368a6bf03fab775162e1bf3588f5f4c3b7f51"
    ),
    "archives/heldout/mortgage_renewal.json": (
        "a418b04b06e7fd0b873db0c1beecd806c5b08d9c393aa42882164b9c4116b4a7"
    ),
    "archives/heldout/offer_negotiation.json": (
        "d1ba65699163c295a37de8bc23e62c2640ebc602f165ec9c13f89629c162b4dc"
    ),
    "archives/heldout/painting_leos_room.json": (
        "65e8d7c43213c1b6ef50160e1e9add4e8f708a7a8c4397b427ce66f58a2921bf"
    ),
    "archives/heldout/parents_money_insurance_zh.json": (
        "13d2285cfbd262b264d116bf29f5477af86151ed2c0d59244b950f1f7f643ded"
    ),
    "archives/heldout/personal_laptop.json": (
        "9a0c9aa88be776e9215d2ffe09b2b319fef43d541fcd2ef03e1d7799a7a914d3"
    ),
    "archives/heldout/photo_book.json": (
        "6e4af5687c49fb2f78514fb86694f282378b146693a3132cb7622febffe7dac1"
    ),
    "archives/heldout/postgres_dispatch_queries.json": (
        "5c9d098680ccf51327b42338f248b96b612e2335547450b2f91fdcae553ab17e"
    ),
    "archives/heldout/residence_permit_job_change.json": (
        "c3fc1b6b652e4645a0dea7a0f7542f1dcfba6e14c4cd1d548da915720033e954"
    ),
    "archives/heldout/running_10k_plan.json": (
        "9a0007507f2deac19b7e0a22670522870d02a699959322b1e8544d107edfb619"
    ),
    "archives/heldout/sichuan_home_cooking_zh.json": (
        "96d6f935779dd8108a366a416fdd4e94ee694dac0e6ee95f3bc646cb8b15ab7b"
    ),
    "archives/heldout/sinterklaas_gifts.json": (
        "f6fda9e0b4b21c4317eee967479488e79f96d743bf9d8b488b2a247389d61b66"
    ),
    "archives/heldout/sleep_and_screens.json": (
        "d1a9f38b53f964da0982c57d6bc12fbd852763039c753b5fae7d7e7ee32a32fb"
    ),
    "archives/heldout/sourdough.json": (
        "c2e484c47f7f0d8f551d8704671e86943435f07faa59c3e67090f67d9c5cf969"
    ),
    "archives/heldout/spring_festival_zh.json": (
        "07158923ad81ddbc2854a6336d5766db8eba5be5d3537d56d1028f997cff278c"
    ),
    "archives/heldout/taobao_shipping_zh.json": (
        "64f5be2f1d145062fb4363990b9df9b7edfce59183396690b87d703f8da46915"
    ),
    "archives/heldout/tax_return.json": (
        "2c24bb8b47b4d6df1fd7623ea7bc9281a50c9bb9341117f82ac6dddf32eea0e6"
    ),
    "archives/heldout/tideline_first_weeks.json": (
        "00b79566a7d073bd1fd60e6d91817d2c021fc84e769b284d4f914251cb5575f0"
    ),
    "archives/heldout/train_commute.json": (
        "d58122b74d37c125bb29d37f5376672d5ce24add764b873179d52bda9ed90e1d"
    ),
    "archives/heldout/weeknight_dinners.json": (
        "b8ba46b98f9f767e3130173d62dd373cf0e7548e27038b223ef76ce4292bf818"
    ),
    "archives/heldout/windowsill_chilies_zh.json": (
        "31692a89e7a8f6e3f722529f8b476c762eb49b9dc6410119ebda8812a78b3241"
    ),
    "archives/heldout/winter_flu.json": (
        "5e761bcf14e453ad5d7223751b6239beba7124a011714466563f8aa38f0baade"
    ),
    "offtopic/heldout.jsonl": ("ac9dff60478ddce3abb6dd39fb8e0c49212c1f348d7c883feb7ecf8fd29d25ef"),
}


def assert_frozen(paths: list[Path], frozen: dict[str, str]) -> None:
    assert {str(path.relative_to(ROOT)) for path in paths} == set(frozen)
    for name, digest in frozen.items():
        assert hashlib.sha256((ROOT / name).read_bytes()).hexdigest() == digest, name


def test_the_held_out_files_are_exactly_the_frozen_ones() -> None:
    assert_frozen(
        [*HELD_OUT_DIR.glob("*.json"), *(DIALOGUE_DIR / "heldout").glob("*.json")], FROZEN
    )


def test_the_held_out_archive_and_off_topic_probes_are_exactly_the_frozen_ones() -> None:
    assert_frozen(
        [*(ROOT / "archives" / "heldout").glob("*.json"), *(ROOT / "offtopic").glob("heldout.*")],
        ARCHIVE_FROZEN,
    )
