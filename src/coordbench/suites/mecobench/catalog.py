"""What coordbench's own MECoBench-style scenes are made of: templates, classes, furniture.

Templates and legal placements follow the MECoBench paper (Tables 4 and 5); the appearance
descriptions are coordbench's own.
"""

from __future__ import annotations

ROOMS = ("bathroom", "bedroom", "kitchen", "livingroom")

# template -> (relation, goal furniture, object classes)
TEMPLATES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "self_caring": ("on", "bathroomcounter", ("toothbrush", "toothpaste", "towel", "barsoap")),
    "work_on_desk": ("on", "desk", ("keyboard", "mouse", "cellphone", "mug")),
    "gaming_setup": ("on", "coffeetable",
                     ("boardgame", "remotecontrol", "magazine", "toy", "book")),
    "afternoon_tea": ("on", "coffeetable", ("cupcake", "juice", "wine", "pudding", "apple")),
    "wash_dishes": ("inside", "dishwasher", ("plate", "waterglass", "wineglass", "cutleryfork")),
    "prepare_food": ("on", "kitchentable", ("cupcake", "juice", "pancake", "poundcake", "wine",
                                            "pudding", "apple", "coffeepot")),
    "fridge": ("inside", "fridge", ("cupcake", "juice", "pancake", "poundcake", "wine",
                                    "pudding", "apple")),
    "dinner_table": ("on", "kitchentable", ("plate", "waterglass", "wineglass", "cutleryfork")),
}

# the 25 object classes in 6 categories, with sizes (x, y, z in metres) and descriptions
OBJECTS: dict[str, tuple[str, tuple[float, float, float], str]] = {
    "toothbrush": ("Props", (0.03, 0.2, 0.03), "slim teal toothbrush with white bristles"),
    "toothpaste": ("Props", (0.05, 0.18, 0.04), "white tube with a red cap and blue stripes"),
    "towel": ("Props", (0.4, 0.1, 0.3), "folded sage-green cotton towel"),
    "barsoap": ("Props", (0.09, 0.04, 0.06), "oval ivory bar of soap"),
    "keyboard": ("Electronics", (0.45, 0.03, 0.15), "black low-profile keyboard"),
    "mouse": ("Electronics", (0.07, 0.04, 0.11), "matte grey wireless mouse"),
    "cellphone": ("Electronics", (0.08, 0.01, 0.16), "black smartphone in a clear case"),
    "mug": ("Kitchenware", (0.1, 0.11, 0.1), "white ceramic mug with a blue rim"),
    "boardgame": ("Toys", (0.4, 0.08, 0.3), "red boxed board game with gold lettering"),
    "remotecontrol": ("Electronics", (0.05, 0.03, 0.18), "slim black remote with grey keys"),
    "magazine": ("Props", (0.22, 0.01, 0.29), "glossy magazine with a yellow cover"),
    "toy": ("Toys", (0.15, 0.15, 0.15), "small plush brown bear"),
    "book": ("Props", (0.16, 0.04, 0.24), "hardcover book with a dark green spine"),
    "cupcake": ("Food", (0.07, 0.08, 0.07), "pink frosted cupcake in a polka-dot wrapper"),
    "juice": ("Food", (0.08, 0.22, 0.08), "carton of orange juice with a green leaf logo"),
    "wine": ("Food", (0.08, 0.32, 0.08), "dark green bottle of red wine with a cream label"),
    "pudding": ("Food", (0.13, 0.07, 0.13), "amber caramel pudding in a fluted cup"),
    "apple": ("Food", (0.08, 0.08, 0.08), "shiny red apple with a short stem"),
    "pancake": ("Food", (0.2, 0.03, 0.2), "stack of golden pancakes"),
    "poundcake": ("Food", (0.25, 0.09, 0.1), "loaf of yellow pound cake"),
    "coffeepot": ("Kitchenware", (0.18, 0.25, 0.15), "steel coffee pot with a black handle"),
    "plate": ("Kitchenware", (0.26, 0.02, 0.26), "plain white round plate"),
    "waterglass": ("Kitchenware", (0.07, 0.12, 0.07), "clear tumbler glass"),
    "wineglass": ("Kitchenware", (0.08, 0.2, 0.08), "long-stemmed clear wine glass"),
    "cutleryfork": ("Kitchenware", (0.02, 0.01, 0.2), "stainless-steel dinner fork"),
}
LARGE = frozenset({"towel", "keyboard", "boardgame", "coffeepot", "pancake", "poundcake"})

# furniture class -> (properties, openable, size, description)
FURNITURE: dict[str, tuple[tuple[str, ...], bool, tuple[float, float, float], str]] = {
    "fridge": (("CONTAINERS",), True, (0.8, 1.8, 0.7), "tall white two-door fridge"),
    "stove": (("CONTAINERS", "SURFACES"), True, (0.7, 0.9, 0.6), "black stove with an oven"),
    "dishwasher": (("CONTAINERS",), True, (0.6, 0.85, 0.6), "steel dishwasher under the counter"),
    "microwave": (("CONTAINERS",), True, (0.5, 0.3, 0.4), "white microwave with a glass door"),
    "cabinet": (("CONTAINERS", "SURFACES"), True, (0.9, 1.0, 0.45), "oak cabinet, two doors"),
    "bookshelf": (("CONTAINERS", "SURFACES"), False, (1.0, 1.8, 0.35), "open walnut bookshelf"),
    "sofa": (("SURFACES",), False, (2.0, 0.8, 0.9), "grey three-seat fabric sofa"),
    "bathroomcounter": (("SURFACES",), False, (1.2, 0.9, 0.55), "white counter with a sink"),
    "nightstand": (("SURFACES",), False, (0.5, 0.6, 0.4), "small pine nightstand"),
    "bench": (("SURFACES",), False, (1.4, 0.45, 0.4), "wooden slat bench"),
    "bed": (("SURFACES",), False, (1.6, 0.6, 2.0), "double bed with a blue cover"),
    "desk": (("SURFACES",), False, (1.4, 0.75, 0.7), "light-wood desk with steel legs"),
    "tvstand": (("SURFACES",), False, (1.6, 0.5, 0.45), "low black tv stand"),
    "kitchencounter": (("SURFACES",), False, (2.0, 0.9, 0.6), "granite kitchen counter"),
    "coffeetable": (("SURFACES",), False, (1.1, 0.45, 0.6), "square low coffee table, grey top"),
    "kitchentable": (("SURFACES",), False, (1.6, 0.75, 0.9), "rectangular white kitchen table"),
}
START_CONTAINERS = frozenset({"fridge", "stove", "dishwasher", "microwave", "cabinet",
                              "bookshelf"})
START_SURFACES = frozenset({"sofa", "cabinet", "bathroomcounter", "nightstand", "bench", "bed",
                            "desk", "tvstand", "kitchencounter", "coffeetable", "stove",
                            "kitchentable"})
ROOM_FURNITURE: dict[str, tuple[str, ...]] = {
    "bathroom": ("bathroomcounter", "cabinet"),
    "bedroom": ("bed", "nightstand", "desk", "bookshelf", "cabinet"),
    "kitchen": ("fridge", "stove", "dishwasher", "microwave", "kitchencounter", "kitchentable",
                "cabinet"),
    "livingroom": ("sofa", "coffeetable", "tvstand", "bench", "bookshelf"),
}

# 8 apartments: room -> grid cell; rooms fill square cells of the apartment's size, and doors
# (a tree) sit in the middle of the wall two adjacent rooms share.
APARTMENTS: list[tuple[float, dict[str, tuple[int, int]], list[tuple[str, str]]]] = [
    (8.0, {"bathroom": (0, 0), "bedroom": (1, 0), "kitchen": (1, 1), "livingroom": (2, 1)},
     [("bathroom", "bedroom"), ("bedroom", "kitchen"), ("kitchen", "livingroom")]),
    (7.5, {"kitchen": (0, 0), "bathroom": (0, 1), "bedroom": (1, 0), "livingroom": (-1, 0)},
     [("kitchen", "bathroom"), ("kitchen", "bedroom"), ("kitchen", "livingroom")]),
    (8.5, {"livingroom": (0, 0), "kitchen": (1, 0), "bedroom": (0, 1), "bathroom": (1, 1)},
     [("livingroom", "kitchen"), ("livingroom", "bedroom"), ("bedroom", "bathroom")]),
    (7.0, {"bathroom": (0, 0), "kitchen": (1, 0), "bedroom": (2, 0), "livingroom": (3, 0)},
     [("bathroom", "kitchen"), ("kitchen", "bedroom"), ("bedroom", "livingroom")]),
    (9.0, {"bedroom": (0, 0), "bathroom": (0, 1), "livingroom": (1, 0), "kitchen": (1, 1)},
     [("bedroom", "bathroom"), ("bedroom", "livingroom"), ("livingroom", "kitchen")]),
    (8.0, {"kitchen": (0, 0), "livingroom": (1, 0), "bathroom": (2, 0), "bedroom": (1, 1)},
     [("kitchen", "livingroom"), ("livingroom", "bathroom"), ("livingroom", "bedroom")]),
    (7.5, {"livingroom": (0, 0), "bedroom": (0, -1), "kitchen": (1, 0), "bathroom": (2, 0)},
     [("livingroom", "bedroom"), ("livingroom", "kitchen"), ("kitchen", "bathroom")]),
    (8.5, {"bedroom": (0, 0), "livingroom": (1, 0), "kitchen": (1, 1), "bathroom": (0, 1)},
     [("bedroom", "livingroom"), ("livingroom", "kitchen"), ("bedroom", "bathroom")]),
]
