"""The travel world: airports, a flight inventory, one corporate account, holds and reservations.

The clock is `now` in state and does not advance within an episode: holds made in an episode
stay active (15 minutes of simulated time), while holds seeded with an `expires_at` before `now`
are expired. Ids come from `next_id`, so a replayed episode produces the same ids.
"""

from __future__ import annotations

from typing import Literal

from chaosproxy.domains.kit import DomainState
from pydantic import BaseModel, Field

HOLD_MINUTES = 15


class Airport(BaseModel):
    code: str
    name: str
    city: str
    city_code: str
    country: str
    utc_offset: str = Field(description="Offset in force 2026-03-08..2026-03-28 (US daylight time)")


class Flight(BaseModel):
    flight_id: str
    airline: str
    origin: str
    dest: str
    date: str
    depart_time: str
    arrive_time: str
    arrive_day_offset: int = 0
    stops: int = 0
    via: str | None = None
    price: float
    currency: str = "USD"
    seats_left: int
    fare_class: str = "economy"
    aircraft: str = "A320"


class Traveler(BaseModel):
    traveler_id: str
    name: str
    email: str
    loyalty_number: str | None = None


class PaymentMethod(BaseModel):
    payment_id: str
    kind: Literal["corporate_card", "personal_card"]
    brand: str
    last4: str
    holder: str


class Hold(BaseModel):
    hold_id: str
    flight_id: str
    status: Literal["active", "confirmed", "expired"]
    created_at: str
    expires_at: str


class Reservation(BaseModel):
    reservation_id: str
    confirmation_code: str
    flight_id: str
    passenger: str
    payment_id: str
    status: Literal["confirmed", "cancelled"]
    price: float
    currency: str
    booked_at: str
    hold_id: str | None = None


class TravelAnswer(BaseModel):
    """What an information task asks for; every field optional, compared after normalisation."""

    flight_id: str | None = None
    date: str | None = None
    price: float | None = None


class TravelState(DomainState):
    today: str = "2026-03-02"
    now: str = "2026-03-02T09:00:00-05:00"
    next_id: int = 1
    account_id: str = "ACC-NW-001"
    company: str = "Northwind Labs"
    airports: list[Airport]
    flights: list[Flight]
    travelers: list[Traveler]
    payment_methods: list[PaymentMethod]
    holds: list[Hold] = Field(default_factory=list)
    reservations: list[Reservation] = Field(default_factory=list)
    answers: list[TravelAnswer] = Field(default_factory=list)


AIRPORTS: list[Airport] = [
    Airport(
        code="SFO",
        name="San Francisco International",
        city="San Francisco",
        city_code="SFO",
        country="US",
        utc_offset="-07:00",
    ),
    Airport(
        code="LAX",
        name="Los Angeles International",
        city="Los Angeles",
        city_code="LAX",
        country="US",
        utc_offset="-07:00",
    ),
    Airport(
        code="SEA",
        name="Seattle-Tacoma International",
        city="Seattle",
        city_code="SEA",
        country="US",
        utc_offset="-07:00",
    ),
    Airport(
        code="JFK",
        name="John F. Kennedy International",
        city="New York",
        city_code="NYC",
        country="US",
        utc_offset="-04:00",
    ),
    Airport(
        code="LGA",
        name="LaGuardia",
        city="New York",
        city_code="NYC",
        country="US",
        utc_offset="-04:00",
    ),
    Airport(
        code="EWR",
        name="Newark Liberty International",
        city="New York",
        city_code="NYC",
        country="US",
        utc_offset="-04:00",
    ),
    Airport(
        code="BOS",
        name="Boston Logan International",
        city="Boston",
        city_code="BOS",
        country="US",
        utc_offset="-04:00",
    ),
    Airport(
        code="ORD",
        name="Chicago O'Hare International",
        city="Chicago",
        city_code="CHI",
        country="US",
        utc_offset="-05:00",
    ),
    Airport(
        code="MDW",
        name="Chicago Midway International",
        city="Chicago",
        city_code="CHI",
        country="US",
        utc_offset="-05:00",
    ),
    Airport(
        code="LHR",
        name="London Heathrow",
        city="London",
        city_code="LON",
        country="GB",
        utc_offset="+00:00",
    ),
    Airport(
        code="LGW",
        name="London Gatwick",
        city="London",
        city_code="LON",
        country="GB",
        utc_offset="+00:00",
    ),
    Airport(
        code="CDG",
        name="Paris Charles de Gaulle",
        city="Paris",
        city_code="PAR",
        country="FR",
        utc_offset="+01:00",
    ),
    Airport(
        code="ORY",
        name="Paris Orly",
        city="Paris",
        city_code="PAR",
        country="FR",
        utc_offset="+01:00",
    ),
]

AIRLINES = {
    "AA": "American Airlines",
    "AF": "Air France",
    "AS": "Alaska Airlines",
    "B6": "JetBlue",
    "BA": "British Airways",
    "DL": "Delta Air Lines",
    "NK": "Spirit Airlines",
    "U2": "easyJet",
    "UA": "United Airlines",
    "WN": "Southwest Airlines",
}

# flight    from to  date       dep   arrive(+days) stops via price  cur seats
_FLIGHT_TABLE = """
AA-0016  SFO JFK 2026-03-10 06:00 14:25    0 -    412.00 USD 12
UA-1523  SFO JFK 2026-03-10 08:05 16:35    0 -    389.00 USD  9
DL-0417  SFO JFK 2026-03-10 11:30 20:05    0 -    342.00 USD  4
AS-0004  SFO JFK 2026-03-10 13:10 23:55    1 ORD  298.00 USD  5
B6-0916  SFO JFK 2026-03-10 22:45 07:05+1  0 -    219.00 USD  7
UA-0624  JFK SFO 2026-03-14 07:15 10:45    0 -    276.00 USD  6
B6-0415  JFK SFO 2026-03-14 12:00 15:35    0 -    264.00 USD  0
DL-0771  JFK SFO 2026-03-14 17:40 21:10    0 -    251.00 USD  3
AA-0177  JFK SFO 2026-03-14 19:55 23:30    0 -    305.00 USD  8
UA-2014  EWR SFO 2026-03-14 20:30 23:59    1 DEN  233.00 USD  2
BA-0304  LHR CDG 2026-03-12 07:40 09:55    0 -    189.00 EUR 10
AF-1081  LHR CDG 2026-03-12 10:15 12:30    0 -    142.00 EUR 10
U2-8321  LGW CDG 2026-03-12 06:25 08:40    0 -    118.00 EUR  5
BA-0318  LHR ORY 2026-03-12 16:05 18:20    0 -    156.00 EUR  7
U2-8323  LGW CDG 2026-03-13 06:25 08:40    0 -     89.00 EUR  0
AF-1181  LHR CDG 2026-03-13 10:15 12:30    0 -    131.00 EUR  4
BA-0308  LHR CDG 2026-03-13 13:40 15:55    0 -    176.00 EUR 12
AA-2210  BOS ORD 2026-03-11 06:00 07:45    0 -    161.00 USD 11
UA-0988  BOS ORD 2026-03-11 09:30 11:20    0 -    149.00 USD  6
NK-0455  BOS ORD 2026-03-11 12:10 14:05    0 -     89.00 USD 22
WN-1402  BOS MDW 2026-03-11 08:00 09:50    0 -     79.00 USD 14
AA-0300  JFK ORD 2026-03-11 07:00 08:55    0 -    184.00 USD  9
UA-0654  LGA ORD 2026-03-11 08:15 10:05    0 -    167.00 USD  8
UA-1109  EWR ORD 2026-03-11 12:40 14:20    0 -    152.00 USD  5
WN-0880  LGA MDW 2026-03-11 19:00 20:40    0 -    139.00 USD  2
NK-0611  LGA ORD 2026-03-11 21:30 23:20    0 -     99.00 USD  0
AS-0331  LAX SEA 2026-03-13 06:00 08:45    0 -    238.00 USD  3
DL-1560  LAX SEA 2026-03-13 08:30 11:15    0 -    129.00 USD 10
UA-2289  LAX SEA 2026-03-13 13:05 15:50    0 -    142.00 USD  7
DL-0408  JFK LAX 2026-03-09 08:00 11:25    0 -    318.00 USD  5
AA-0001  JFK LAX 2026-03-09 09:00 12:20    0 -    355.00 USD  6
B6-0023  JFK LAX 2026-03-09 14:30 17:55    0 -    289.00 USD  3
AS-1342  SEA SFO 2026-03-09 07:00 09:05    0 -    158.00 USD  4
UA-0511  SEA SFO 2026-03-09 10:30 12:40    0 -    171.00 USD  9
UA-0901  SFO LHR 2026-03-12 16:40 10:55+1  0 -   1240.00 USD  3
BA-0178  JFK LHR 2026-03-13 19:00 07:10+1  0 -    720.00 USD  6
AF-1680  CDG LHR 2026-03-16 08:10 08:35    0 -    154.00 EUR  9
BA-0309  CDG LHR 2026-03-16 18:45 19:10    0 -    171.00 EUR 14
AA-0310  ORD LGA 2026-03-12 07:30 10:40    0 -    176.00 USD  7
UA-0657  ORD EWR 2026-03-12 17:05 20:20    0 -    158.00 USD  4
AS-0120  SFO SEA 2026-03-11 07:45 09:55    0 -    129.00 USD 16
UA-0412  SFO SEA 2026-03-11 18:20 20:30    0 -    144.00 USD  8
DL-0902  LAX JFK 2026-03-15 07:00 15:25    0 -    331.00 USD 10
B6-0424  LAX JFK 2026-03-15 23:15 07:40+1  0 -    249.00 USD  6
UA-1788  BOS SFO 2026-03-12 08:30 12:05    0 -    402.00 USD  5
AS-0011  BOS SFO 2026-03-12 17:25 21:00    0 -    367.00 USD  3
"""


def seed_flights() -> list[Flight]:
    flights = []
    for line in _FLIGHT_TABLE.strip().splitlines():
        fid, origin, dest, date, dep, arr, stops, via, price, currency, seats = line.split()
        arrive, _, days = arr.partition("+")
        long_haul = dest in {"LHR", "LGW"} and origin not in {"CDG", "ORY"}
        flights.append(
            Flight(
                flight_id=fid,
                airline=AIRLINES[fid[:2]],
                origin=origin,
                dest=dest,
                date=date,
                depart_time=dep,
                arrive_time=arrive,
                arrive_day_offset=int(days or 0),
                stops=int(stops),
                via=None if via == "-" else via,
                price=float(price),
                currency=currency,
                seats_left=int(seats),
                aircraft="B787-9" if long_haul else "A320",
            )
        )
    return flights


def seed_travelers() -> list[Traveler]:
    return [
        Traveler(
            traveler_id="T-01",
            name="Ana Ruiz",
            email="ana.ruiz@northwind.example",
            loyalty_number="UA-88213",
        ),
        Traveler(traveler_id="T-02", name="Bob Hale", email="bob.hale@northwind.example"),
        Traveler(
            traveler_id="T-03",
            name="Carla Mendes",
            email="carla.mendes@northwind.example",
            loyalty_number="DL-55102",
        ),
        Traveler(traveler_id="T-04", name="Ben Okafor", email="ben.okafor@northwind.example"),
        Traveler(
            traveler_id="T-05",
            name="Victor Kane",
            email="victor.kane@northwind.example",
            loyalty_number="BA-10077",
        ),
    ]


def seed_payment_methods() -> list[PaymentMethod]:
    return [
        PaymentMethod(
            payment_id="corp_amex_1004",
            kind="corporate_card",
            brand="American Express",
            last4="1004",
            holder="Northwind Labs",
        ),
        PaymentMethod(
            payment_id="visa_ana_4242",
            kind="personal_card",
            brand="Visa",
            last4="4242",
            holder="Ana Ruiz",
        ),
        PaymentMethod(
            payment_id="mc_ben_5555",
            kind="personal_card",
            brand="Mastercard",
            last4="5555",
            holder="Ben Okafor",
        ),
    ]


def seed_reservations() -> list[Reservation]:
    return [
        Reservation(
            reservation_id="R-1001",
            confirmation_code="KX4T2M",
            flight_id="UA-0901",
            passenger="Victor Kane",
            payment_id="corp_amex_1004",
            status="confirmed",
            price=1240.0,
            currency="USD",
            booked_at="2026-02-20T15:12:00-05:00",
        ),
        Reservation(
            reservation_id="R-1002",
            confirmation_code="BQ7LZP",
            flight_id="BA-0178",
            passenger="Ana Ruiz",
            payment_id="corp_amex_1004",
            status="confirmed",
            price=720.0,
            currency="USD",
            booked_at="2026-02-24T10:40:00-05:00",
        ),
        Reservation(
            reservation_id="R-1003",
            confirmation_code="HN3W8D",
            flight_id="UA-0988",
            passenger="Bob Hale",
            payment_id="corp_amex_1004",
            status="cancelled",
            price=149.0,
            currency="USD",
            booked_at="2026-02-25T08:03:00-05:00",
        ),
    ]


def make_default_state() -> TravelState:
    """The world a fresh episode (and `chaosproxy up`) gets."""
    return TravelState(
        airports=[a.model_copy() for a in AIRPORTS],
        flights=seed_flights(),
        travelers=seed_travelers(),
        payment_methods=seed_payment_methods(),
        reservations=seed_reservations(),
    )
