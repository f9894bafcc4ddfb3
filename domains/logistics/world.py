"""The seed world: a small Nile-Delta road network, fleet, warehouses, orders and rail."""

from __future__ import annotations

from chaosproxy.domains.logistics.network import RoadType
from chaosproxy.domains.logistics.state import (
    Edge,
    LogisticsState,
    Node,
    Order,
    RailService,
    Shipment,
    Sku,
    Traffic,
    Vehicle,
    Warehouse,
)

NODES = [
    Node(node_id="CAI", name="Cairo", lat=30.044, lon=31.236, rail_terminal=True),
    Node(node_id="GIZ", name="Giza", lat=30.013, lon=31.209),
    Node(node_id="ALX", name="Alexandria", lat=31.200, lon=29.919, rail_terminal=True),
    Node(node_id="BNH", name="Benha", lat=30.466, lon=31.185),
    Node(node_id="TNT", name="Tanta", lat=30.786, lon=31.001, rail_terminal=True),
    Node(node_id="DMH", name="Damanhur", lat=31.034, lon=30.468),
    Node(node_id="OCT", name="6th of October City", lat=29.938, lon=30.914),
    Node(node_id="WNT", name="Wadi El Natrun", lat=30.415, lon=30.311),
    Node(node_id="SDT", name="Sadat City", lat=30.364, lon=30.508),
    Node(node_id="ZGZ", name="Zagazig", lat=30.587, lon=31.502),
    Node(node_id="ISM", name="Ismailia", lat=30.596, lon=32.271, rail_terminal=True),
    Node(node_id="SUZ", name="Suez", lat=29.967, lon=32.550),
    Node(node_id="PSD", name="Port Said", lat=31.265, lon=32.302),
    Node(node_id="FYM", name="Fayoum", lat=29.309, lon=30.842),
]

_EDGE_ROWS: list[tuple[str, str, str, str, float, float, float, RoadType]] = [
    ("E01", "CAI", "GIZ", "Giza corridor", 12, 25, 0, "urban"),
    ("E02", "CAI", "BNH", "Agricultural road (Cairo–Benha)", 48, 50, 0, "rural"),
    ("E03", "BNH", "TNT", "Agricultural road (Benha–Tanta)", 45, 45, 0, "rural"),
    ("E04", "TNT", "DMH", "Agricultural road (Tanta–Damanhur)", 60, 50, 0, "rural"),
    ("E05", "DMH", "ALX", "Damanhur–Alexandria highway", 62, 40, 10, "highway"),
    ("E06", "GIZ", "OCT", "26th of July corridor", 20, 20, 5, "urban"),
    ("E07", "OCT", "WNT", "Desert road (October–Natrun)", 80, 45, 20, "highway"),
    ("E08", "WNT", "ALX", "Desert road (Natrun–Alexandria)", 105, 60, 25, "highway"),
    ("E09", "TNT", "SDT", "Tanta–Sadat link", 45, 40, 0, "desert"),
    ("E10", "SDT", "WNT", "Sadat–Natrun link", 25, 15, 0, "highway"),
    ("E11", "CAI", "ZGZ", "Cairo–Zagazig road", 80, 75, 0, "urban"),
    ("E12", "ZGZ", "ISM", "Zagazig–Ismailia road", 70, 60, 0, "urban"),
    ("E13", "CAI", "ISM", "Cairo–Ismailia desert road", 120, 80, 15, "highway"),
    ("E14", "ISM", "PSD", "Ismailia–Port Said road", 80, 55, 10, "highway"),
    ("E15", "CAI", "SUZ", "Cairo–Suez road", 135, 85, 15, "highway"),
    ("E16", "ISM", "SUZ", "Ismailia–Suez road", 90, 60, 0, "highway"),
    ("E17", "GIZ", "FYM", "Giza–Fayoum desert road", 90, 70, 10, "desert"),
    ("E18", "OCT", "FYM", "October–Fayoum road", 80, 65, 0, "desert"),
    ("E19", "BNH", "ZGZ", "Benha–Zagazig road", 35, 35, 0, "urban"),
    ("E20", "GIZ", "SDT", "Giza–Sadat highway", 95, 60, 10, "highway"),
    ("E21", "CAI", "WNT", "Regional Ring expressway", 110, 55, 35, "expressway"),
]

EDGES = [
    Edge(edge_id=e, a=a, b=b, name=n, distance_km=d, base_time_min=t, toll_egp=toll, road_type=r)
    for e, a, b, n, d, t, toll, r in _EDGE_ROWS
]

TRAFFIC = [
    Traffic(edge_id="E02", delay_min=25, incident="Heavy congestion at Qalyub toll plaza"),
    Traffic(edge_id="E08", delay_min=10, incident="Roadworks near km 70, one lane open"),
    Traffic(edge_id="E11", delay_min=15, incident="Market-day congestion in Belbeis"),
    Traffic(edge_id="E01", delay_min=10),
]

VEHICLES = [
    Vehicle(
        vehicle_id="TRK-101",
        kind="truck",
        plate="ق ن ١٠١",
        depot="CAI",
        capacity_kg=8000,
        fuel_l_per_100km=28.0,
    ),
    Vehicle(
        vehicle_id="TRK-102",
        kind="truck",
        plate="ق ن ١٠٢",
        depot="CAI",
        capacity_kg=8000,
        fuel_l_per_100km=31.0,
    ),
    Vehicle(
        vehicle_id="TRK-103",
        kind="heavy_truck",
        plate="ق ن ١٠٣",
        depot="CAI",
        capacity_kg=24000,
        fuel_l_per_100km=38.0,
    ),
    Vehicle(
        vehicle_id="VAN-201",
        kind="van",
        plate="ق ن ٢٠١",
        depot="CAI",
        capacity_kg=1500,
        fuel_l_per_100km=11.5,
    ),
    Vehicle(
        vehicle_id="VAN-202",
        kind="van",
        plate="ق ن ٢٠٢",
        depot="CAI",
        capacity_kg=1200,
        fuel_l_per_100km=10.5,
        status="dispatched",
    ),
    Vehicle(
        vehicle_id="VAN-203",
        kind="van",
        plate="س ع ٢٠٣",
        depot="ALX",
        capacity_kg=1500,
        fuel_l_per_100km=11.0,
    ),
    Vehicle(
        vehicle_id="VAN-204",
        kind="van",
        plate="غ ر ٢٠٤",
        depot="TNT",
        capacity_kg=1500,
        fuel_l_per_100km=11.0,
    ),
    Vehicle(
        vehicle_id="TRK-104",
        kind="truck",
        plate="س ع ١٠٤",
        depot="ALX",
        capacity_kg=8000,
        fuel_l_per_100km=29.0,
    ),
    Vehicle(
        vehicle_id="REF-301",
        kind="reefer",
        plate="ق ن ٣٠١",
        depot="CAI",
        capacity_kg=5000,
        fuel_l_per_100km=33.0,
    ),
    Vehicle(
        vehicle_id="TRK-105",
        kind="truck",
        plate="ق ن ١٠٥",
        depot="CAI",
        capacity_kg=8000,
        fuel_l_per_100km=30.0,
        status="maintenance",
    ),
]

SKUS = [
    Sku(sku="PAL-STD", name="Standard wooden pallet", unit_weight_kg=25.0),
    Sku(sku="CEM-50", name="Portland cement, 50 kg bag", unit_weight_kg=50.0),
    Sku(sku="H2O-12", name="Bottled water, case of 12 x 1.5 L", unit_weight_kg=18.5),
    Sku(sku="VAC-ICE", name="Insulated vaccine box (2–8 °C)", unit_weight_kg=12.0),
    Sku(sku="TYR-225", name="Truck tyre 315/80 R22.5", unit_weight_kg=65.0),
]

WAREHOUSES = [
    Warehouse(
        warehouse_id="WH-CAI-1",
        name="Cairo East DC",
        node="CAI",
        stock={"PAL-STD": 420, "CEM-50": 900, "H2O-12": 1500, "TYR-225": 40},
        safety_stock={"PAL-STD": 100, "CEM-50": 200, "H2O-12": 300, "TYR-225": 10},
    ),
    Warehouse(
        warehouse_id="WH-ALX-1",
        name="Alexandria Port DC",
        node="ALX",
        stock={"PAL-STD": 120, "CEM-50": 2400, "H2O-12": 800, "TYR-225": 12},
        safety_stock={"PAL-STD": 100, "CEM-50": 200, "H2O-12": 300, "TYR-225": 10},
    ),
    Warehouse(
        warehouse_id="WH-TNT-1",
        name="Tanta Delta Hub",
        node="TNT",
        stock={"PAL-STD": 610, "CEM-50": 300, "H2O-12": 450, "VAC-ICE": 60},
        safety_stock={"PAL-STD": 100, "CEM-50": 100, "H2O-12": 150},
    ),
    Warehouse(
        warehouse_id="WH-ISM-1",
        name="Ismailia Canal DC",
        node="ISM",
        stock={"PAL-STD": 260, "CEM-50": 150, "H2O-12": 2100, "TYR-225": 25},
        safety_stock={"PAL-STD": 80, "CEM-50": 50, "H2O-12": 300, "TYR-225": 5},
    ),
    Warehouse(
        warehouse_id="WH-SUZ-1",
        name="Suez Gulf Depot",
        node="SUZ",
        stock={"PAL-STD": 90, "CEM-50": 50, "H2O-12": 300, "VAC-ICE": 20},
        safety_stock={"PAL-STD": 50, "H2O-12": 100},
    ),
]

ORDERS = [
    Order(
        order_id="ORD-4990",
        customer="Port Said Marine Supply",
        destination="PSD",
        sku="TYR-225",
        quantity=12,
        due_by="2026-03-02T12:00:00+02:00",
        status="dispatched",
        warehouse_id="WH-CAI-1",
    ),
    Order(
        order_id="ORD-5001",
        customer="Delta Agro Co.",
        destination="DMH",
        sku="H2O-12",
        quantity=60,
        due_by="2026-03-02T16:00:00+02:00",
    ),
    Order(
        order_id="ORD-5002",
        customer="Canal Builders",
        destination="PSD",
        sku="CEM-50",
        quantity=100,
        due_by="2026-03-02T18:00:00+02:00",
        status="allocated",
        warehouse_id="WH-CAI-1",
    ),
    Order(
        order_id="ORD-5003",
        customer="Nile Pharmacy Tanta",
        destination="TNT",
        sku="H2O-12",
        quantity=40,
        due_by="2026-03-02T13:00:00+02:00",
        status="allocated",
        warehouse_id="WH-CAI-1",
    ),
    Order(
        order_id="ORD-5004",
        customer="Fayoum Transport Co-op",
        destination="FYM",
        sku="TYR-225",
        quantity=30,
        due_by="2026-03-02T15:00:00+02:00",
        status="allocated",
        warehouse_id="WH-CAI-1",
    ),
    Order(
        order_id="ORD-5005",
        customer="Sharqia Grocers",
        destination="ZGZ",
        sku="H2O-12",
        quantity=70,
        due_by="2026-03-02T14:00:00+02:00",
        status="allocated",
        warehouse_id="WH-CAI-1",
    ),
    Order(
        order_id="ORD-5006",
        customer="Port Said General Hospital",
        destination="PSD",
        sku="VAC-ICE",
        quantity=24,
        due_by="2026-03-02T09:30:00+02:00",
        status="allocated",
        warehouse_id="WH-CAI-1",
    ),
    Order(
        order_id="ORD-5007",
        customer="Suez Canal Works",
        destination="ISM",
        sku="CEM-50",
        quantity=400,
        due_by="2026-03-02T17:30:00+02:00",
        status="allocated",
        warehouse_id="WH-ALX-1",
    ),
]

SHIPMENTS = [
    Shipment(
        shipment_id="SHP-0900",
        vehicle_id="VAN-202",
        route=["CAI", "ISM", "PSD"],
        stops=["PSD"],
        order_id="ORD-4990",
        distance_km=200.0,
        duration_min=135.0,
        fuel_litres=21.0,
        toll_egp=25.0,
        departs_at="2026-03-02T07:30:00+02:00",
        eta="2026-03-02T09:45:00+02:00",
    ),
]

RAIL_SERVICES = [
    RailService(
        service_id="RF-811",
        origin="ALX",
        destination="CAI",
        departs_at="2026-03-02T09:00:00+02:00",
        arrives_at="2026-03-02T12:30:00+02:00",
        capacity_t=120,
        price_per_tonne_egp=210,
    ),
    RailService(
        service_id="RF-815",
        origin="ALX",
        destination="CAI",
        departs_at="2026-03-02T11:00:00+02:00",
        arrives_at="2026-03-02T14:10:00+02:00",
        capacity_t=80,
        price_per_tonne_egp=185,
    ),
    RailService(
        service_id="RF-819",
        origin="ALX",
        destination="CAI",
        departs_at="2026-03-02T14:00:00+02:00",
        arrives_at="2026-03-02T17:40:00+02:00",
        capacity_t=150,
        price_per_tonne_egp=160,
    ),
    RailService(
        service_id="RF-902",
        origin="CAI",
        destination="ISM",
        departs_at="2026-03-02T10:30:00+02:00",
        arrives_at="2026-03-02T12:40:00+02:00",
        capacity_t=60,
        price_per_tonne_egp=140,
    ),
    RailService(
        service_id="RF-733",
        origin="ALX",
        destination="TNT",
        departs_at="2026-03-02T10:15:00+02:00",
        arrives_at="2026-03-02T11:45:00+02:00",
        capacity_t=40,
        price_per_tonne_egp=120,
    ),
]


def make_default_state() -> LogisticsState:
    """The world a fresh episode gets (deep copies, so episodes never share records)."""
    return LogisticsState(
        nodes=[n.model_copy() for n in NODES],
        edges=[e.model_copy() for e in EDGES],
        traffic=[t.model_copy() for t in TRAFFIC],
        vehicles=[v.model_copy() for v in VEHICLES],
        skus=[s.model_copy() for s in SKUS],
        warehouses=[w.model_copy(deep=True) for w in WAREHOUSES],
        orders=[o.model_copy() for o in ORDERS],
        rail_services=[r.model_copy() for r in RAIL_SERVICES],
        shipments=[s.model_copy(deep=True) for s in SHIPMENTS],
    )
